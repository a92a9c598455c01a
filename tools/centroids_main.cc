// longqa-centroids: computes a Cluster-Former model's cluster centroids from a corpus and writes
// them into its checkpoint (model/centroid_builder.h). Deterministic for a seed.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "model/compute_info.h"
#include "tools/centroid_builder.h"

ABSL_FLAG(std::string, model_dir, "", "Model folder to update (model.safetensors is rewritten)");
ABSL_FLAG(std::string, corpus, "",
          "JSONL corpus: {\"question\", \"document\"} or {\"question\", \"paragraphs\"} per line");
ABSL_FLAG(int64_t, memory, 100000, "Memory bank: most recent hidden states kept per layer");
ABSL_FLAG(int64_t, max_iterations, 50, "Lloyd iterations at most");
ABSL_FLAG(double, tolerance, 1e-4, "Stop when the mean cosine improves by less than this");
ABSL_FLAG(uint64_t, seed, 1, "Random seed (k-means++)");
ABSL_FLAG(int, threads, 0, "Intra-op threads; 0 = all CPUs");

int main(int argc, char** argv) {
  longqa::RunWithBestBlasKernels(argv);  // OpenBLAS kernels for this CPU: may run main again
  absl::SetProgramUsageMessage(
      "Computes cluster-layer centroids: longqa-centroids --model_dir=DIR --corpus=FILE.jsonl");
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_model_dir).empty() || absl::GetFlag(FLAGS_corpus).empty()) {
    std::cerr << "longqa-centroids: --model_dir and --corpus are required\n";
    return 2;
  }
  longqa::CentroidOptions options;
  options.memory_rows = absl::GetFlag(FLAGS_memory);
  options.max_iterations = absl::GetFlag(FLAGS_max_iterations);
  options.tolerance = absl::GetFlag(FLAGS_tolerance);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.threads = absl::GetFlag(FLAGS_threads);
  const bool terminal = isatty(STDERR_FILENO);
  const auto progress = [terminal](int64_t layer, int64_t done, int64_t total) {
    if (!terminal) return;
    const int filled = static_cast<int>(30 * done / total);
    std::fprintf(stderr, "\rlayer %lld [%s%s] %lld/%lld", static_cast<long long>(layer),
                 std::string(filled, '#').c_str(), std::string(30 - filled, ' ').c_str(),
                 static_cast<long long>(done), static_cast<long long>(total));
    if (done == total) std::fprintf(stderr, "\n");
  };
  const absl::Status status = longqa::BuildCentroids(
      absl::GetFlag(FLAGS_model_dir), absl::GetFlag(FLAGS_corpus), options, progress);
  if (!status.ok()) {
    std::cerr << "longqa-centroids: " << status.message() << "\n";
    return 1;
  }
  std::cerr << "longqa-centroids: wrote " << absl::GetFlag(FLAGS_model_dir)
            << "/model.safetensors\n";
  return 0;
}
