#include "model/encoders/int8_linear.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/quantized/PackedParams.h>
#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <stdexcept>

#include "model/encoders/fused_cpu_attention_avx2.h"

namespace longqa {
namespace {

using PackFn = c10::intrusive_ptr<LinearPackedParamsBase>(at::Tensor, c10::optional<at::Tensor>);

// The per-row passes around the integer GEMM, each a row at a time while it is in L1: they cost
// what the GEMM's own quantisation passes cost (LibTorch ops, three a side, took 10-25% of int8's
// time), in AVX2 where the CPU has it.
#define LONGQA_ROW_BODY __attribute__((always_inline)) inline

// A row x [n]: its minimum and range, and unit = (x - lo) / range, in [0, 1] (0 for a constant
// row).
LONGQA_ROW_BODY float InverseRange(float range) { return range > 0 ? 1.0f / range : 0.0f; }

void RowToUnitPlain(const float* x, int64_t n, float* unit, float* lo_out, float* range_out) {
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (int64_t j = 0; j < n; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  const float inverse = InverseRange(hi - lo);
  for (int64_t j = 0; j < n; ++j) unit[j] = (x[j] - lo) * inverse;
  *lo_out = lo;
  *range_out = hi - lo;
}

__attribute__((target("avx2,fma"))) void RowToUnitAvx2(const float* x, int64_t n, float* unit,
                                                       float* lo_out, float* range_out) {
  __m256 lo8 = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  __m256 hi8 = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 v = _mm256_loadu_ps(x + j);
    lo8 = _mm256_min_ps(lo8, v);
    hi8 = _mm256_max_ps(hi8, v);
  }
  alignas(32) float lanes_lo[8], lanes_hi[8];
  _mm256_store_ps(lanes_lo, lo8);
  _mm256_store_ps(lanes_hi, hi8);
  float lo = *std::min_element(lanes_lo, lanes_lo + 8),
        hi = *std::max_element(lanes_hi, lanes_hi + 8);
  for (int64_t k = j; k < n; ++k) {
    lo = std::min(lo, x[k]);
    hi = std::max(hi, x[k]);
  }
  const float inverse = InverseRange(hi - lo);
  const __m256 lo_v = _mm256_set1_ps(lo), inverse_v = _mm256_set1_ps(inverse);
  for (j = 0; j + 8 <= n; j += 8) {
    _mm256_storeu_ps(unit + j,
                     _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), lo_v), inverse_v));
  }
  for (; j < n; ++j) unit[j] = (x[j] - lo) * inverse;
  *lo_out = lo;
  *range_out = hi - lo;
}

// y [n] of a row whose input had minimum lo and range `range`: y * range * row_scale + lo *
// weight_row_sum + bias.
LONGQA_ROW_BODY void FinishRowBody(float* __restrict y, int64_t n, float lo, float range,
                                   const float* __restrict row_scale,
                                   const float* __restrict weight_row_sum,
                                   const float* __restrict bias) {
  for (int64_t o = 0; o < n; ++o)
    y[o] = y[o] * range * row_scale[o] + (lo * weight_row_sum[o] + bias[o]);
}

__attribute__((target("avx2,fma"))) void FinishRowAvx2(float* y, int64_t n, float lo, float range,
                                                       const float* row_scale,
                                                       const float* weight_row_sum,
                                                       const float* bias) {
  FinishRowBody(y, n, lo, range, row_scale, weight_row_sum, bias);
}
void FinishRowPlain(float* y, int64_t n, float lo, float range, const float* row_scale,
                    const float* weight_row_sum, const float* bias) {
  FinishRowBody(y, n, lo, range, row_scale, weight_row_sum, bias);
}

std::atomic<bool> plain_row_passes_for_testing{false};

bool RowPassesUseAvx2() {
  // The AVX2 + FMA check the fused window attention's AVX2 form already makes.
  return Avx2AttentionAvailable() && !plain_row_passes_for_testing.load(std::memory_order_relaxed);
}

// Rows per task of the row passes: a few hundred KiB of floats.
int64_t RowGrain(int64_t width) { return std::max<int64_t>(1, (int64_t{1} << 16) / width); }

}  // namespace

void UsePlainInt8RowPassesForTesting(bool plain) { plain_row_passes_for_testing = plain; }

bool Int8LinearAvailable() {
  const auto& engines = at::globalContext().supportedQEngines();
  return std::find(engines.begin(), engines.end(), at::QEngine::ONEDNN) != engines.end();
}

bool Int8ActivationsUse7Bits() {
  static const bool reduce = [] {
    // Raw CPUID bits, not __builtin_cpu_supports: Clang 14 (the sanitizer and fuzz builds)
    // rejects "avxvnni" at compile time. AVX512_VNNI: leaf 7 sub-leaf 0, ECX bit 11; AVX-VNNI:
    // leaf 7 sub-leaf 1, EAX bit 4.
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool avx512_vnni =
        __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 11)) != 0;
    const bool avx_vnni =
        __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 && (eax & (1u << 4)) != 0;
    return !avx512_vnni && !avx_vnni;
  }();
  return reduce;
}

Int8Linear::Int8Linear(const at::Tensor& weight, const at::Tensor& bias) {
  if (!Int8LinearAvailable()) {
    throw std::runtime_error(
        "int8 needs LibTorch's oneDNN quantized engine, which this build lacks");
  }
  at::globalContext().setQEngine(at::QEngine::ONEDNN);
  const at::Tensor w = weight.detach().to(at::kFloat).contiguous();
  // Symmetric, one scale per output row: each row's largest magnitude maps to 127. LibTorch 1.13's
  // oneDNN engine computes per-channel quantised weights wrong (11% off on a random 96x80 weight),
  // so the rows are brought to one range first (divided by their scales), quantised per tensor
  // with scale 1, and the GEMM's output rows are multiplied back: y = (x Wq^T) * s + b.
  row_scale_ = w.abs().amax(1).clamp_min(1e-12) / 127.0;
  quantized_ = at::quantize_per_tensor(w / row_scale_.unsqueeze(1), 1.0, 0, at::kQInt8);
  bias_ = bias.detach().to(at::kFloat).contiguous();
  weight_row_sum_ = dequantized_weight().sum(1);
  static const auto pack = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("quantized::linear_prepack", "")
                               .typed<PackFn>();
  packed_ = pack.call(quantized_, c10::nullopt);
}

Int8Linear::~Int8Linear() = default;
Int8Linear::Int8Linear(Int8Linear&&) noexcept = default;
Int8Linear& Int8Linear::operator=(Int8Linear&&) noexcept = default;

at::Tensor Int8Linear::dequantized_weight() const {
  return quantized_.dequantize() * row_scale_.unsqueeze(1);
}

at::Tensor Int8Linear::Forward(const at::Tensor& x) const {
  const int64_t in = x.size(-1);
  std::vector<int64_t> shape = x.sizes().vec();
  const at::Tensor rows = x.reshape({-1, in}).contiguous();
  const int64_t m = rows.size(0);
  // Each row (token) brought to [0, 1] by its own minimum and range, so that the engine's
  // per-tensor quantisation (range [0, 1]: zero point 0, no clipping) gives every row its own
  // grid: the widest rows (2-9x the median row's range in models/demo's layers) no longer
  // coarsen the grid of the whole block (int8_linear.h).
  at::Tensor unit = at::empty_like(rows);
  at::Tensor lo = at::empty({m}, rows.options()), range = at::empty({m}, rows.options());
  const bool avx2 = RowPassesUseAvx2();
  {
    const float* xp = rows.data_ptr<float>();
    float *up = unit.data_ptr<float>(), *lp = lo.data_ptr<float>(), *rp = range.data_ptr<float>();
    at::parallel_for(0, m, RowGrain(in), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        (avx2 ? RowToUnitAvx2 : RowToUnitPlain)(xp + r * in, in, up + r * in, lp + r, rp + r);
      }
    });
  }
  at::Tensor y = packed_->apply_dynamic(unit, /*reduce_range=*/Int8ActivationsUse7Bits());
  // x W^T + b = range * (unit Wn^T) * row_scale + lo * (row sums of W) + b, in place.
  const int64_t out = y.size(1);
  float* yp = y.data_ptr<float>();
  const float *lp = lo.data_ptr<float>(), *rp = range.data_ptr<float>();
  const float *sp = row_scale_.data_ptr<float>(), *wp = weight_row_sum_.data_ptr<float>(),
              *bp = bias_.data_ptr<float>();
  at::parallel_for(0, m, RowGrain(out), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      (avx2 ? FinishRowAvx2 : FinishRowPlain)(yp + r * out, out, lp[r], rp[r], sp, wp, bp);
    }
  });
  shape.back() = y.size(-1);
  return y.view(shape);
}

}  // namespace longqa
