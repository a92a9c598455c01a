#include "model/encoders/fused_cpu_ops.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "model/encoders/avx512_vector.h"

namespace longqa {
namespace {

using simd::ExpNonPositive;
using simd::Lanes;
using simd::Load;
using simd::Store;

// Rows of at most this many elements per parallel task, so that a few rows of scores (or a block
// of hidden rows) make a task and the threads split even a small chunk.
constexpr int64_t kGrainElements = 16384;

int64_t Grain(int64_t row_length) { return std::max<int64_t>(1, kGrainElements / row_length); }

// One row of n scores into `out`; `tmp` holds n floats (the exponentials between the passes, so a
// bf16 row is rounded once).
template <typename T>
LONGQA_AVX512 void SoftmaxRow(const T* row, T* out, int64_t n, float* tmp) {
  __m512 most = _mm512_set1_ps(-INFINITY);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = Lanes(n - i);
    most = _mm512_mask_max_ps(most, m, most, Load(row + i, m));
  }
  const __m512 shift = _mm512_set1_ps(_mm512_reduce_max_ps(most));
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = Lanes(n - i);
    const __m512 e = _mm512_maskz_mov_ps(m, ExpNonPositive(_mm512_sub_ps(Load(row + i, m), shift)));
    sum = _mm512_add_ps(sum, e);
    _mm512_storeu_ps(tmp + i, e);
  }
  const __m512 scale = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = Lanes(n - i);
    Store(out + i, _mm512_mul_ps(_mm512_loadu_ps(tmp + i), scale), m);
  }
}

// gelu(x) = x/2 (1 + erf(x / sqrt 2)); erf by Abramowitz & Stegun 7.1.26 (absolute error
// 1.5e-7): erf(z) = 1 - t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) e^(-z^2), t = 1 / (1 + p z).
template <typename T>
LONGQA_AVX512 void GeluSpan(T* x, int64_t n) {
  const __m512 sign_bit = _mm512_set1_ps(-0.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = Lanes(n - i);
    const __m512 v = Load(x + i, m);
    const __m512 z =
        _mm512_mul_ps(_mm512_andnot_ps(sign_bit, v), _mm512_set1_ps(0.70710678118654752f));
    const __m512 t = _mm512_div_ps(
        _mm512_set1_ps(1.0f), _mm512_fmadd_ps(z, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f)));
    __m512 p = _mm512_set1_ps(1.061405429f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
    p = _mm512_mul_ps(p, t);
    const __m512 e = ExpNonPositive(_mm512_mul_ps(_mm512_mul_ps(z, z), _mm512_set1_ps(-1.0f)));
    const __m512 erf_abs = _mm512_fnmadd_ps(p, e, _mm512_set1_ps(1.0f));
    const __m512 erf = _mm512_or_ps(erf_abs, _mm512_and_ps(sign_bit, v));  // erf is odd
    const __m512 half_x = _mm512_mul_ps(v, _mm512_set1_ps(0.5f));
    Store(x + i, _mm512_fmadd_ps(half_x, erf, half_x), m);
  }
}

// out = layer_norm(y + residual) of one row of d, and its bf16 copy where `low` is not null.
template <typename T>
LONGQA_AVX512 void AddLayerNormRow(const T* y, const float* residual, const float* weight,
                                   const float* bias, float eps, int64_t d, float* out,
                                   at::BFloat16* low) {
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < d; i += 16) {
    const __mmask16 m = Lanes(d - i);
    const __m512 z = _mm512_add_ps(Load(y + i, m), Load(residual + i, m));
    sum = _mm512_add_ps(sum, z);
    Store(out + i, z, m);
  }
  const float mean = _mm512_reduce_add_ps(sum) / static_cast<float>(d);
  const __m512 vmean = _mm512_set1_ps(mean);
  __m512 squares = _mm512_setzero_ps();
  for (int64_t i = 0; i < d; i += 16) {
    const __mmask16 m = Lanes(d - i);
    const __m512 c = _mm512_maskz_sub_ps(m, Load(out + i, m), vmean);
    squares = _mm512_fmadd_ps(c, c, squares);
  }
  const float variance = _mm512_reduce_add_ps(squares) / static_cast<float>(d);
  const __m512 rstd = _mm512_set1_ps(1.0f / std::sqrt(variance + eps));
  for (int64_t i = 0; i < d; i += 16) {
    const __mmask16 m = Lanes(d - i);
    const __m512 c = _mm512_mul_ps(_mm512_sub_ps(Load(out + i, m), vmean), rstd);
    const __m512 o = _mm512_fmadd_ps(c, Load(weight + i, m), Load(bias + i, m));
    Store(out + i, o, m);
    if (low != nullptr) Store(low + i, o, m);
  }
}

bool FastDtype(const at::Tensor& t) {
  return t.scalar_type() == at::kFloat || t.scalar_type() == at::kBFloat16;
}

bool FastPath(const at::Tensor& t) {
  return FusedCpuOpsAvailable() && t.is_cpu() && t.is_contiguous() && FastDtype(t) &&
         t.dim() >= 1 && t.size(-1) > 0 && !t.requires_grad();
}

template <typename F>
void ForEachDtype(const at::Tensor& t, F&& f) {
  if (t.scalar_type() == at::kFloat) {
    f(t.data_ptr<float>());
  } else {
    f(t.data_ptr<at::BFloat16>());
  }
}

// The fast path's softmax of each row of `scores` into the same row of `out` (scores' shape and
// dtype); `out` may be `scores`: SoftmaxRow reads a row whole (its maximum, then its
// exponentials into tmp) before it writes it.
at::Tensor SoftmaxRowsInto(const at::Tensor& scores, at::Tensor out) {
  const int64_t n = scores.size(-1);
  ForEachDtype(scores, [&](auto* data) {
    using T = std::remove_pointer_t<decltype(data)>;
    T* o = out.data_ptr<T>();
    at::parallel_for(0, scores.numel() / n, Grain(n), [&](int64_t begin, int64_t end) {
      std::vector<float> tmp(n + 16);
      for (int64_t r = begin; r < end; ++r) SoftmaxRow(data + r * n, o + r * n, n, tmp.data());
    });
  });
  return out;
}

}  // namespace

bool FusedCpuOpsAvailable() {
  static const bool available =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bf16");
  return available;
}

at::Tensor SoftmaxLastDim(const at::Tensor& scores) {
  if (!FastPath(scores)) return at::softmax(scores, -1);
  return SoftmaxRowsInto(scores, at::empty_like(scores));
}

at::Tensor SoftmaxLastDimInPlace(at::Tensor scores) {
  if (FastPath(scores)) return SoftmaxRowsInto(scores, scores);
  if (scores.is_cpu() && scores.is_contiguous() && !scores.requires_grad()) {
    // LibTorch's CPU kernel reads each row (its maximum) before it writes it, so its out= form
    // may be the input (checked against at::softmax in fused_cpu_ops_test).
    return at::_softmax_out(scores, scores, -1, false);
  }
  return scores.copy_(at::softmax(scores, -1));  // GPU, strided: untested in place there
}

at::Tensor GeluInPlace(at::Tensor x) {
  if (!FastPath(x)) {
    // LibTorch 1.13's CPU kernel for bf16 (the AVX2 one, on CPUs without AVX-512) rounds erf to
    // bf16 before adding 1: gelu(-3.33) came out 0, not -0.00145. Through fp32 instead.
    if (x.is_cpu() && x.scalar_type() == at::kBFloat16) return x.copy_(at::gelu(x.to(at::kFloat)));
    return at::gelu_out(x, x);
  }
  const int64_t n = x.size(-1);
  ForEachDtype(x, [&](auto* data) {
    at::parallel_for(0, x.numel() / n, Grain(n), [&](int64_t begin, int64_t end) {
      GeluSpan(data + begin * n, (end - begin) * n);
    });
  });
  return x;
}

void GeluFloats(float* x, int64_t n) { GeluSpan(x, n); }

at::Tensor AddLayerNorm(const at::Tensor& y, const at::Tensor& residual, const at::Tensor& weight,
                        const at::Tensor& bias, double eps, const at::Tensor& low_precision) {
  const int64_t d = y.size(-1);
  const bool low = low_precision.defined();
  // The other operands as the fast path reads them: fp32, on the CPU, contiguous.
  const auto cpu_float = [](const at::Tensor& t) {
    return t.scalar_type() == at::kFloat && t.is_cpu() && t.is_contiguous();
  };
  const bool fast = FastPath(y) && cpu_float(residual) && residual.sizes() == y.sizes() &&
                    cpu_float(weight) && weight.numel() == d && cpu_float(bias) &&
                    bias.numel() == d &&
                    (!low || (low_precision.scalar_type() == at::kBFloat16 &&
                              low_precision.is_contiguous() && low_precision.sizes() == y.sizes()));
  if (!fast) {
    at::Tensor out =
        at::layer_norm(at::add(y.to(residual.scalar_type()), residual), {d}, weight, bias, eps);
    if (low) low_precision.copy_(out);
    return out;
  }
  at::Tensor out = at::empty(y.sizes(), residual.options());
  const float* r = residual.data_ptr<float>();
  const float* w = weight.data_ptr<float>();
  const float* b = bias.data_ptr<float>();
  float* o = out.data_ptr<float>();
  at::BFloat16* l = low ? low_precision.data_ptr<at::BFloat16>() : nullptr;
  ForEachDtype(y, [&](auto* data) {
    at::parallel_for(0, y.numel() / d, Grain(d), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        AddLayerNormRow(data + row * d, r + row * d, w, b, static_cast<float>(eps), d, o + row * d,
                        l == nullptr ? nullptr : l + row * d);
      }
    });
  });
  return out;
}

}  // namespace longqa
