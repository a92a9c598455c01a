// The attention-only timing of docs/perf/README.md's session 25 section: LibTorch's path (as
// TransformerLayer's non-fused inference path runs it: chunked baddbmm, softmax, bmm, layout
// copies) against Avx2WindowAttention, 37 windows of 276 tokens, 12 heads, 2 threads. Not built by
// CMake:
//   g++ -O3 -fopenmp -std=gnu++17 -D_GLIBCXX_USE_CXX11_ABI=1 -I. -isystem
//   /usr/include/torch/csrc/api/include \
//     bench/results/avx2_attention/attention_timing.cc model/encoders/fused_cpu_attention_avx2.cc \
//     -o /tmp/attention_timing -ltorch -ltorch_cpu -lc10
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <cstdio>

#include "model/encoders/fused_cpu_attention_avx2.h"
using namespace longqa;
double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
int main() {
  at::set_num_threads(2);
  for (int64_t dh : {64, 32}) {
    int64_t b = 37, t = 276, h = (dh == 64 ? 12 : 12), d = h * dh;
    at::Tensor qkv = at::randn({b, t, 3 * d});
    at::Tensor valid = at::ones({b, t}, at::kBool);
    at::Tensor out = at::empty({b, t, d});
    auto lib = [&] {
      at::Tensor x = qkv.view({b, t, 3, h, dh}).permute({2, 0, 3, 1, 4});
      at::Tensor q = x[0].reshape({b * h, t, dh}), k = x[1].reshape({b * h, t, dh}),
                 v = x[2].reshape({b * h, t, dh});
      at::Tensor bias = at::zeros({b * h, 1, t});
      int64_t chunk = std::max<int64_t>(1, (1 << 20) / (t * t));
      at::Tensor hc = at::empty({b * h, t, dh});
      for (int64_t s = 0; s < b * h; s += chunk) {
        int64_t n = std::min(chunk, b * h - s);
        at::Tensor sc = at::baddbmm(bias.narrow(0, s, n), q.narrow(0, s, n),
                                    k.narrow(0, s, n).transpose(1, 2), 1.0, 0.125);
        at::Tensor o = hc.narrow(0, s, n);
        at::bmm_out(o, at::softmax(sc, -1), v.narrow(0, s, n));
      }
      return hc.view({b, h, t, dh}).transpose(1, 2).reshape({b, t, d});
    };
    auto fused = [&] {
      Avx2WindowAttention(qkv.data_ptr<float>(), valid.data_ptr<bool>(), b, t, d, h,
                          out.data_ptr<float>());
    };
    lib();
    fused();
    for (int rep = 0; rep < 3; ++rep) {
      double t0 = Now();
      for (int i = 0; i < 5; ++i) lib();
      double t1 = Now();
      for (int i = 0; i < 5; ++i) fused();
      double t2 = Now();
      std::printf("dh %ld: libtorch %.1f ms, avx2 %.1f ms\n", dh, (t1 - t0) / 5 * 1e3,
                  (t2 - t1) / 5 * 1e3);
    }
  }
}
