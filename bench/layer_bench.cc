// One transformer layer's inference time (TransformerLayer::Forward over a batch of windows, random
// weights), for comparing changes to a layer's kernels: the whole encoder bench moves 5-25% between
// runs on a shared machine, a layer's best of many repetitions less. Run two builds' binaries in
// alternation and compare their best times within the same round (docs/perf/README.md, session 38).
//
// Usage: longqa-layer-bench [--precision=fp32|bf16|int8] [--hidden=384] [--heads=12]
//                           [--ffn=1536] [--windows=5] [--tokens=279] [--reps=150] [--threads=N]
// The defaults are MiniLM's dims and the QA bench's windows (a 20-token question + 256 context).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "model/compute_info.h"
#include "model/cpu_quota.h"
#include "model/encoders/transformer_layer.h"
#include "model/format/config.h"
#include "model/format/weights.h"

int main(int argc, char** argv) {
  longqa::RunWithBestBlasKernels(argv);  // OpenBLAS kernels for this CPU: may run main again
  longqa::PreferAvx512Kernels(longqa::CpuIsa());  // before LibTorch's first kernel call
  longqa::Precision precision = longqa::Precision::kInt8;
  int64_t hidden = 384, heads = 12, ffn = 1536, windows = 5, tokens = 279, reps = 150;
  int threads = longqa::ThisProcessCpuQuota().usable_cpus;  // as the server's --threads=0
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (std::strncmp(a, "--precision=", 12) == 0 && longqa::ParsePrecision(a + 12)) {
      precision = *longqa::ParsePrecision(a + 12);
    } else if (std::strncmp(a, "--hidden=", 9) == 0) {
      hidden = std::atoll(a + 9);
    } else if (std::strncmp(a, "--heads=", 8) == 0) {
      heads = std::atoll(a + 8);
    } else if (std::strncmp(a, "--ffn=", 6) == 0) {
      ffn = std::atoll(a + 6);
    } else if (std::strncmp(a, "--windows=", 10) == 0) {
      windows = std::atoll(a + 10);
    } else if (std::strncmp(a, "--tokens=", 9) == 0) {
      tokens = std::atoll(a + 9);
    } else if (std::strncmp(a, "--reps=", 7) == 0) {
      reps = std::atoll(a + 7);
    } else if (std::strncmp(a, "--threads=", 10) == 0) {
      threads = std::atoi(a + 10);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--precision=fp32|bf16|int8] [--hidden=N] [--heads=N] [--ffn=N] "
                   "[--windows=N] [--tokens=N] [--reps=N] [--threads=N]\n",
                   argv[0]);
      return 2;
    }
  }
  if (hidden <= 0 || heads <= 0 || hidden % heads != 0 || ffn <= 0 || windows <= 0 || tokens <= 0 ||
      reps <= 0 || threads <= 0) {
    std::fprintf(stderr, "%s: positive sizes, and --hidden a multiple of --heads\n", argv[0]);
    return 2;
  }
  at::set_num_threads(threads);
  at::InferenceMode guard;
  const longqa::ModelConfig config =
      longqa::ClusterFormerConfig(1000, hidden, heads, ffn, "S", tokens, tokens, 0, 1);
  const longqa::TransformerLayer layer(longqa::RandomWeights(config, 5), "encoder.layer.0", config,
                                       precision);
  const at::Tensor x = at::randn({windows, tokens, hidden});
  const at::Tensor valid = at::ones({windows, tokens}, at::kBool);
  for (int i = 0; i < 5; ++i) layer.Forward(x, valid);  // warm-up: packing, allocator, caches
  double best = 1e30, total = 0;
  for (int64_t i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    layer.Forward(x, valid);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, s);
    total += s;
  }
  std::printf(
      "%s layer d %ld heads %ld ffn %ld, %ld windows x %ld tokens, %d threads: best %.3f ms, "
      "mean %.3f ms (%ld reps), %.1f us a row at best\n",
      longqa::PrecisionName(precision), long(hidden), long(heads), long(ffn), long(windows),
      long(tokens), threads, best * 1e3, total / reps * 1e3, long(reps),
      best * 1e6 / (windows * tokens));
  return 0;
}
