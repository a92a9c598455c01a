// The GEMM comparison of docs/perf/README.md's session 25 section: at::linear (OpenBLAS) against
// oneDNN's fp32 linear (at::mkldnn_linear, with the input's conversions) at the layer shapes of
// MiniLM (d 384) and BERT-base (d 768), 10,212 rows, 2 threads. Not built by CMake:
//   g++ -O2 -std=gnu++17 -D_GLIBCXX_USE_CXX11_ABI=1 -isystem /usr/include/torch/csrc/api/include \
//     bench/results/avx2_attention/gemm_timing.cc -o /tmp/gemm_timing -ltorch -ltorch_cpu -lc10
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <cstdio>
double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
int main() {
  at::set_num_threads(2);
  struct S {
    int64_t m, k, n;
  };
  for (S s : {S{10212, 384, 1152}, S{10212, 384, 1536}, S{10212, 1536, 384}, S{10212, 768, 3072}}) {
    at::Tensor x = at::randn({s.m, s.k}), w = at::randn({s.n, s.k}), b = at::randn({s.n});
    at::Tensor wm = w.to_mkldnn();
    auto f1 = [&] { return at::linear(x, w, b); };
    auto f2 = [&] { return at::mkldnn_linear(x.to_mkldnn(), wm, b).to_dense(); };
    f1();
    f2();
    for (int rep = 0; rep < 2; ++rep) {
      double t0 = Now();
      for (int i = 0; i < 5; ++i) f1();
      double t1 = Now();
      for (int i = 0; i < 5; ++i) f2();
      double t2 = Now();
      double fl = 2.0 * s.m * s.k * s.n * 5;
      std::printf("%ldx%ldx%ld: openblas %.0f GFLOP/s, onednn %.0f GFLOP/s\n", s.m, s.k, s.n,
                  fl / (t1 - t0) / 1e9, fl / (t2 - t1) / 1e9);
    }
  }
}
