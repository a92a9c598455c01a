#include "model/encoders/int8_linear.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "model/encoders/avx512_vector.h"
#include "model/encoders/fused_cpu_attention_avx2.h"
#include "model/encoders/fused_cpu_ops.h"
#include "model/encoders/gptq.h"

namespace longqa {
namespace {

// The per-row passes around the integer GEMM, each a row at a time while it is in L1 (LibTorch's
// own quantisation passes over whole fp32 copies took 10-25% of int8's time), in AVX2 where the
// CPU has it.
#define LONGQA_ROW_BODY __attribute__((always_inline)) inline

// A row x [n] onto its own grid of `top` steps from its minimum to its maximum: q = round((x -
// lo) / step), step = (max - lo) / top (q all 0 and step 0 for a constant row). `excluded`
// (null, or 1 for each column that a calibrated layer keeps in fp32, else 0) leaves columns out of
// the minimum and maximum; their q, clamped to 0..top, is never read (their weights are zero).
LONGQA_ROW_BODY float InverseStep(float range, float top) { return range > 0 ? top / range : 0.0f; }

LONGQA_ROW_BODY uint8_t Level(float x, float lo, float inverse, float top) {
  // Rounded to nearest, ties to even, as the AVX2 form's conversion.
  return static_cast<uint8_t>(std::clamp(std::nearbyint((x - lo) * inverse), 0.0f, top));
}

void QuantizeRowPlain(const float* x, int64_t n, float top, const float* excluded, uint8_t* q,
                      float* lo_out, float* step_out) {
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (int64_t j = 0; j < n; ++j) {
    if (excluded != nullptr && excluded[j] != 0) continue;
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  const float inverse = InverseStep(hi - lo, top);
  for (int64_t j = 0; j < n; ++j) q[j] = Level(x[j], lo, inverse, top);
  *lo_out = lo;
  *step_out = (hi - lo) / top;
}

__attribute__((target("avx2,fma"))) void QuantizeRowAvx2(const float* x, int64_t n, float top,
                                                         const float* excluded, uint8_t* q,
                                                         float* lo_out, float* step_out) {
  const __m256 infinity = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  const __m256 minus_infinity = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 lo8 = infinity, hi8 = minus_infinity;
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 v = _mm256_loadu_ps(x + j);
    if (excluded == nullptr) {
      lo8 = _mm256_min_ps(lo8, v);
      hi8 = _mm256_max_ps(hi8, v);
    } else {
      const __m256 out =
          _mm256_cmp_ps(_mm256_loadu_ps(excluded + j), _mm256_setzero_ps(), _CMP_NEQ_OQ);
      lo8 = _mm256_min_ps(lo8, _mm256_blendv_ps(v, infinity, out));
      hi8 = _mm256_max_ps(hi8, _mm256_blendv_ps(v, minus_infinity, out));
    }
  }
  alignas(32) float lanes_lo[8], lanes_hi[8];
  _mm256_store_ps(lanes_lo, lo8);
  _mm256_store_ps(lanes_hi, hi8);
  float lo = *std::min_element(lanes_lo, lanes_lo + 8),
        hi = *std::max_element(lanes_hi, lanes_hi + 8);
  for (int64_t k = j; k < n; ++k) {
    if (excluded != nullptr && excluded[k] != 0) continue;
    lo = std::min(lo, x[k]);
    hi = std::max(hi, x[k]);
  }
  const float inverse = InverseStep(hi - lo, top);
  const __m256 lo_v = _mm256_set1_ps(lo), inverse_v = _mm256_set1_ps(inverse);
  for (j = 0; j + 8 <= n; j += 8) {
    // Rounded to nearest (the MXCSR default), then 32 → 16 → 8 bits, saturating (only an
    // excluded column can fall outside 0..top).
    const __m256i i32 =
        _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), lo_v), inverse_v));
    const __m128i i16 =
        _mm_packus_epi32(_mm256_castsi256_si128(i32), _mm256_extracti128_si256(i32, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(q + j), _mm_packus_epi16(i16, i16));
  }
  for (; j < n; ++j) q[j] = Level(x[j], lo, inverse, top);
  *lo_out = lo;
  *step_out = (hi - lo) / top;
}

// y [n], the integer sums of a row whose input had minimum lo and step `step`: y * step *
// row_scale + lo * weight_row_sum + bias.
LONGQA_ROW_BODY void FinishRowBody(float* __restrict y, int64_t n, float lo, float step,
                                   const float* __restrict row_scale,
                                   const float* __restrict weight_row_sum,
                                   const float* __restrict bias) {
  for (int64_t o = 0; o < n; ++o)
    y[o] = y[o] * step * row_scale[o] + (lo * weight_row_sum[o] + bias[o]);
}

__attribute__((target("avx2,fma"))) void FinishRowAvx2(float* y, int64_t n, float lo, float step,
                                                       const float* row_scale,
                                                       const float* weight_row_sum,
                                                       const float* bias) {
  FinishRowBody(y, n, lo, step, row_scale, weight_row_sum, bias);
}
void FinishRowPlain(float* y, int64_t n, float lo, float step, const float* row_scale,
                    const float* weight_row_sum, const float* bias) {
  FinishRowBody(y, n, lo, step, row_scale, weight_row_sum, bias);
}

// y [n] += x_c * w_c for each fp32 column c: w [k, n], one row per column; values [k].
LONGQA_ROW_BODY void AddFp32ColumnsBody(float* __restrict y, int64_t n, const float* values,
                                        int64_t k, const float* __restrict w) {
  for (int64_t c = 0; c < k; ++c) {
    const float v = values[c];
    const float* __restrict row = w + c * n;
    for (int64_t o = 0; o < n; ++o) y[o] += v * row[o];
  }
}

__attribute__((target("avx2,fma"))) void AddFp32ColumnsAvx2(float* y, int64_t n,
                                                            const float* values, int64_t k,
                                                            const float* w) {
  AddFp32ColumnsBody(y, n, values, k, w);
}
// The same with 16 outputs in a register through all k columns: one load and store of y, not k
// (calibrated int8 on MiniLM: 0.95x the uncalibrated speed with this form and the gather in the
// quantising pass, 0.80-0.88x with the AVX2 form and a copy of each row).
LONGQA_AVX512 void AddFp32ColumnsAvx512(float* y, int64_t n, const float* values, int64_t k,
                                        const float* w) {
  for (int64_t o = 0; o < n; o += 16) {
    const __mmask16 m = simd::Lanes(n - o);
    __m512 sum = simd::Load(y + o, m);
    for (int64_t c = 0; c < k; ++c) {
      sum = _mm512_fmadd_ps(_mm512_set1_ps(values[c]), simd::Load(w + c * n + o, m), sum);
    }
    simd::Store(y + o, sum, m);
  }
}
void AddFp32ColumnsPlain(float* y, int64_t n, const float* values, int64_t k, const float* w) {
  AddFp32ColumnsBody(y, n, values, k, w);
}

std::atomic<bool> plain_row_passes_for_testing{false};

bool RowPassesUseAvx2() {
  // The AVX2 + FMA check the fused window attention's AVX2 form already makes.
  return Avx2AttentionAvailable() && !plain_row_passes_for_testing.load(std::memory_order_relaxed);
}

// Rows per task of the row passes: a few hundred KiB of floats.
int64_t RowGrain(int64_t width) { return std::max<int64_t>(1, (int64_t{1} << 16) / width); }

// Symmetric, one scale per output row: each row's largest magnitude maps to 127.
at::Tensor RowScales(const at::Tensor& weight) {
  return weight.abs().amax(1).clamp_min(1e-12) / 127.0;
}

at::Tensor QuantizeRows(const at::Tensor& weight, const at::Tensor& row_scale) {
  // Rounded to nearest, ties to even; within -127..127 by the scale.
  return at::round(weight / row_scale.unsqueeze(1)).clamp(-127, 127).to(at::kChar).contiguous();
}

}  // namespace

void UsePlainInt8RowPassesForTesting(bool plain) { plain_row_passes_for_testing = plain; }

bool Int8LinearAvailable() { return Int8Gemm::Available(); }

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

struct Int8Linear::Rounded {
  at::Tensor row_scale, quantized, fp32_columns, fp32_weights, fp32_column_flags;
};

Int8Linear::Rounded Int8Linear::Round(const at::Tensor& weight, const Int8InputStats* calibration) {
  const at::Tensor w = weight.detach().to(at::kFloat);
  const int64_t in = w.size(1);
  Rounded r;
  if (calibration == nullptr) {
    r.row_scale = RowScales(w);
    r.quantized = QuantizeRows(w, r.row_scale);
    r.fp32_columns = at::empty({0}, at::kLong);
    r.fp32_weights = at::empty({0, w.size(0)}, at::kFloat);
    return r;
  }
  // The widest input columns in fp32 (a quarter of the columns at most, so that a narrow layer
  // keeps most in int8); the rest rounded by GPTQ on scales of their own.
  const int64_t k = std::min(kInt8OutlierColumns, in / 4);
  r.fp32_columns = std::get<0>(std::get<1>(calibration->column_max.to(at::kFloat).topk(k)).sort());
  at::Tensor kept_mask = at::ones({in}, at::kBool);
  kept_mask.index_fill_(0, r.fp32_columns, false);
  const at::Tensor kept = kept_mask.nonzero().squeeze(1);
  const at::Tensor kept_weight = w.index_select(1, kept);
  r.row_scale = RowScales(kept_weight);
  const at::Tensor moments = calibration->second_moment.index_select(0, kept).index_select(1, kept);
  r.quantized = at::zeros({w.size(0), in}, at::kChar);
  r.quantized.index_copy_(1, kept, GptqRoundRows(kept_weight, r.row_scale, moments));
  r.fp32_weights = w.index_select(1, r.fp32_columns).t().contiguous();
  r.fp32_column_flags = (~kept_mask).to(at::kFloat).contiguous();
  return r;
}

Int8Linear::Int8Linear(const at::Tensor& weight, const at::Tensor& bias,
                       const Int8InputStats* calibration)
    : Int8Linear(Round(weight, calibration), bias) {}

Int8Linear::Int8Linear(Rounded rounded, const at::Tensor& bias)
    : row_scale_(std::move(rounded.row_scale)),
      quantized_(std::move(rounded.quantized)),
      gemm_(quantized_, Int8ActivationsUse7Bits()),
      bias_(bias.detach().to(at::kFloat).contiguous()),
      weight_row_sum_(dequantized_weight().sum(1)),
      fp32_columns_(std::move(rounded.fp32_columns)),
      fp32_weights_(std::move(rounded.fp32_weights)),
      fp32_column_flags_(std::move(rounded.fp32_column_flags)) {}

Int8Linear::~Int8Linear() = default;
Int8Linear::Int8Linear(Int8Linear&&) noexcept = default;
Int8Linear& Int8Linear::operator=(Int8Linear&&) noexcept = default;

at::Tensor Int8Linear::dequantized_weight() const {
  return quantized_.to(at::kFloat) * row_scale_.unsqueeze(1);
}

at::Tensor Int8Linear::Forward(const at::Tensor& x, Activation activation) const {
  const int64_t in = x.size(-1);
  std::vector<int64_t> shape = x.sizes().vec();
  const at::Tensor rows = x.reshape({-1, in}).to(at::kFloat).contiguous();
  const int64_t m = rows.size(0);
  // Each row (token) on a grid of its own, from its minimum to its maximum: the widest rows
  // (2-9x the median row's range in models/demo's layers) do not coarsen the others' grid
  // (int8_linear.h).
  const float top = Int8ActivationsUse7Bits() ? 127.0f : 255.0f;
  at::Tensor q = at::empty({m, in}, rows.options().dtype(at::kByte));
  at::Tensor lo = at::empty({m}, rows.options()), step = at::empty({m}, rows.options());
  const bool avx2 = RowPassesUseAvx2();
  const float* xp = rows.data_ptr<float>();
  const int64_t k = fp32_columns_.numel();
  const int64_t* columns = fp32_columns_.data_ptr<int64_t>();
  // The fp32 columns' values, gathered while each row is in cache ([m, k]).
  const at::Tensor fp32_values = k > 0 ? at::empty({m, k}, rows.options()) : at::Tensor();
  float* fv = k > 0 ? fp32_values.data_ptr<float>() : nullptr;
  const float* excluded = k > 0 ? fp32_column_flags_.data_ptr<float>() : nullptr;
  {
    uint8_t* qp = q.data_ptr<uint8_t>();
    float *lp = lo.data_ptr<float>(), *sp = step.data_ptr<float>();
    at::parallel_for(0, m, RowGrain(in), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* row = xp + r * in;
        for (int64_t c = 0; c < k; ++c) fv[r * k + c] = row[columns[c]];
        (avx2 ? QuantizeRowAvx2 : QuantizeRowPlain)(row, in, top, excluded, qp + r * in, lp + r,
                                                    sp + r);
      }
    });
  }
  at::Tensor y = gemm_.Run(q);
  // x W^T + b = step * (q Wq^T) * row_scale + lo * (row sums of W) + b, in place; GELU on the
  // row while it is in L1 where the fused ops run.
  const bool gelu = activation == Activation::kGelu;
  // FusedCpuOpsAvailable: AVX-512 (the fused ops' check, which the AVX-512 passes here share).
  const bool avx512 = avx2 && FusedCpuOpsAvailable();
  const bool fused_gelu = gelu && avx512;
  const int64_t out = y.size(1);
  float* yp = y.data_ptr<float>();
  const float *lp = lo.data_ptr<float>(), *sp = step.data_ptr<float>();
  const float *rs = row_scale_.data_ptr<float>(), *wp = weight_row_sum_.data_ptr<float>(),
              *bp = bias_.data_ptr<float>(), *fw = fp32_weights_.data_ptr<float>();
  at::parallel_for(0, m, RowGrain(out), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* y_row = yp + r * out;
      (avx2 ? FinishRowAvx2 : FinishRowPlain)(y_row, out, lp[r], sp[r], rs, wp, bp);
      if (k > 0) {
        (avx512 ? AddFp32ColumnsAvx512
         : avx2 ? AddFp32ColumnsAvx2
                : AddFp32ColumnsPlain)(y_row, out, fv + r * k, k, fw);
      }
      if (fused_gelu) GeluFloats(y_row, out);
    }
  });
  if (gelu && !fused_gelu) GeluInPlace(y);
  shape.back() = out;
  return y.view(shape);
}

}  // namespace longqa
