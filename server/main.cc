// longqa-server: the gRPC question-answering server. SIGTERM/SIGINT drain it gracefully.
#include <pthread.h>
#include <signal.h>

#include <iostream>
#include <string>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "base/version.h"
#include "model/compute_info.h"
#include "server/options.h"
#include "server/server.h"

int main(int argc, char** argv) {
  longqa::RunWithBestBlasKernels(argv);  // OpenBLAS kernels for this CPU: may run main again
  longqa::PreferAvx512Kernels(longqa::CpuIsa());  // before LibTorch's first kernel call
  absl::SetProgramUsageMessage(
      "longqa-server: answers questions about long documents over gRPC.\n"
      "Usage: longqa-server --model_dir=DIR [--listen=HOST:PORT] [--metrics_listen=HOST:PORT] "
      "[flags]");
  absl::FlagsUsageConfig usage_config;
  usage_config.version_string = [] {
    return std::string("longqa-server ") + longqa::kVersion + "\n";
  };
  absl::SetFlagsUsageConfig(usage_config);
  absl::ParseCommandLine(argc, argv);
  auto options = longqa::ServerOptionsFromFlags();
  if (!options.ok()) {
    std::cerr << "longqa-server: " << options.status().message() << "\n";
    return 2;
  }
  // Signals go to sigwait below, never to a random thread: block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A client that leaves while an HTTPS answer is written must not kill the server: OpenSSL
  // writes with write(), which raises SIGPIPE on a closed socket (plain sockets use MSG_NOSIGNAL).
  signal(SIGPIPE, SIG_IGN);

  auto server = longqa::LongqaServer::Start(*options);
  if (!server.ok()) {
    std::cerr << "longqa-server: " << server.status().message() << "\n";
    return 1;
  }
  // --log_level: info lines (start-up, drain) only at "info"; errors always.
  const bool info = options->log_level == "info";
  if (info) {
    // One write: a reader of the log (tests/integration/server_process.h) sees the whole line.
    std::string line = "longqa-server " + std::string(longqa::kVersion) + ": serving " +
                       options->model_dir + " on port " + std::to_string((*server)->grpc_port()) +
                       ", metrics on port " + std::to_string((*server)->metrics_port());
    if ((*server)->http_port() > 0) {
      line += ", HTTP API on port " + std::to_string((*server)->http_port());
    }
    std::cerr << line + "\n" << std::flush;
  }
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  if (info) {
    std::cerr << "longqa-server: signal " << signal_number << ", draining (up to "
              << options->drain_timeout_s << " s)" << std::endl;
  }
  const longqa::DrainResult drained = (*server)->Drain();
  if (!drained.finished) {
    // Exit code 3: a supervisor (or a test) sees that accepted calls went unanswered by a model.
    std::cerr << "longqa-server: drain timed out after " << options->drain_timeout_s << " s; "
              << drained.abandoned << " accepted request(s) answered UNAVAILABLE, exiting"
              << std::endl;
    return 3;
  }
  if (info) std::cerr << "longqa-server: drained, exiting" << std::endl;
  return 0;
}
