// longqa-server: the gRPC question-answering server.
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "server/version.h"

ABSL_FLAG(std::string, model_dir, "models/demo",
          "Model folder: config.json, model.safetensors, spm.model");
ABSL_FLAG(std::string, listen, "0.0.0.0:50051", "gRPC listen address, host:port");
ABSL_FLAG(std::string, metrics_listen, "0.0.0.0:9464",
          "Prometheus /metrics listen address, host:port");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "longqa-server: answers questions about long documents over gRPC.\n"
      "Usage: longqa-server --model_dir=DIR [--listen=HOST:PORT] [--metrics_listen=HOST:PORT]");
  absl::FlagsUsageConfig usage_config;
  usage_config.version_string = [] {
    return std::string("longqa-server ") + longqa::kVersion + "\n";
  };
  absl::SetFlagsUsageConfig(usage_config);
  absl::ParseCommandLine(argc, argv);

  std::cerr << "longqa-server " << longqa::kVersion
            << ": serving is not built yet (the server issue adds the service, batcher and "
               "metrics); only --version and --help work.\n";
  return 2;
}
