#include "model/encoders/fused_cpu_attention_avx2.h"

#include <ATen/Parallel.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "model/encoders/attention_key_bias.h"

// Every function below runs only after Avx2AttentionAvailable()'s check; the rest of the project
// is built for the baseline x86-64.
#define LONGQA_AVX2 __attribute__((target("avx2,fma")))

namespace longqa {
namespace {

// Query rows a block: the score tile's 6 rows x 16 keys are 12 accumulators, plus 2 vectors of
// keys and a broadcast query feature: 15 of the 16 registers.
constexpr int kRows = 6;

// A task's buffers: the keys transposed [dh][tp], the values [t][dh] (contiguous: in the stacked
// projection their rows are 3d floats apart, a stride that maps them onto a few L1 sets, and the
// weighted sum of every row block reads them all), a block of query rows' scores [kRows][tp], the
// key bias [tp] and the rows' 1 / sum of exponentials.
struct Scratch {
  std::vector<float> kt, v, scores, bias, inv_sum;
};

// One head of one window: queries rows `ld` floats apart (the stacked projection), values rows
// `v_ld` apart (the task's copy), t tokens, tp = t rounded up to 8, the context rows `out_ld`
// apart.
struct Head {
  const float* q;
  const float* v;
  int64_t ld, v_ld, t, tp;
  float* out;
  int64_t out_ld;
};

LONGQA_AVX2 inline float ReduceMax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

LONGQA_AVX2 inline float ReduceAdd(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// e^x for x <= 0, as avx512_vector.h's ExpNonPositive (Cody-Waite reduction, Taylor polynomial
// of degree 6, error 1.2e-7), with 2^n built in the exponent bits: so x is clamped to -87, where
// n stays a normal number's exponent, and the result is 0 below it (e^-87 = 1.6e-38: -inf and the
// -1e30 padding bias give 0 as there). NaN stays NaN.
LONGQA_AVX2 inline __m256 ExpNonPositive(__m256 x) {
  const __m256 floor = _mm256_set1_ps(-87.0f);
  const __m256 keep = _mm256_cmp_ps(x, floor, _CMP_NLT_UQ);  // true for NaN
  x = _mm256_max_ps(floor, x);                               // NaN (the second operand) returned
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187e-6f), r);
  __m256 p = _mm256_set1_ps(1.0f / 720);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i two_n = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);  // n >= -126
  return _mm256_and_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(two_n)), keep);
}

// kt[c * tp + j] = K[j][c], zero for the padding keys j >= t: the score kernel then reads 8 keys
// of one feature a load. A plain loop (AVX2's gathers are slow on the CPUs this form is for); the
// head's t x dh copies are about 1% of its products.
void PackKeysTransposed(const float* k, int64_t ld, int64_t t, int64_t tp, int64_t dh, float* kt) {
  for (int64_t j = 0; j < t; ++j) {
    for (int64_t c = 0; c < dh; ++c) kt[c * tp + j] = k[j * ld + c];
  }
  for (int64_t c = 0; c < dh; ++c) std::fill(kt + c * tp + t, kt + (c + 1) * tp, 0.0f);
}

// scores[r][j, j + 8 NJ) = scale (q_r . k_j) + bias_j for R query rows.
template <int R, int NJ>
LONGQA_AVX2 inline void ScoreTile(const float* q, int64_t ld, const float* kt, int64_t tp,
                                  int64_t dh, __m256 scale, const float* bias, float* scores,
                                  int64_t j) {
  __m256 acc[R][NJ];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < NJ; ++v) acc[r][v] = _mm256_setzero_ps();
  }
  for (int64_t c = 0; c < dh; ++c) {
    __m256 key[NJ];
#pragma GCC unroll 2
    for (int v = 0; v < NJ; ++v) key[v] = _mm256_loadu_ps(kt + c * tp + j + 8 * v);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 feature = _mm256_broadcast_ss(q + r * ld + c);
#pragma GCC unroll 2
      for (int v = 0; v < NJ; ++v) acc[r][v] = _mm256_fmadd_ps(feature, key[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < NJ; ++v) {
      const int64_t at = j + 8 * v;
      _mm256_storeu_ps(scores + r * tp + at,
                       _mm256_fmadd_ps(acc[r][v], scale, _mm256_loadu_ps(bias + at)));
    }
  }
}

// In place: each row of scores becomes e^(score - its max); inv_sum[r] = 1 / the row's sum
// (applied to the R x dh outputs instead of the R x T weights).
LONGQA_AVX2 void ExpRows(float* scores, int rows, int64_t tp, float* inv_sum) {
  for (int r = 0; r < rows; ++r) {
    float* row = scores + r * tp;
    __m256 most = _mm256_set1_ps(-INFINITY);
    for (int64_t j = 0; j < tp; j += 8) most = _mm256_max_ps(most, _mm256_loadu_ps(row + j));
    const __m256 shift = _mm256_set1_ps(ReduceMax(most));
    __m256 sum = _mm256_setzero_ps();
    for (int64_t j = 0; j < tp; j += 8) {
      const __m256 e = ExpNonPositive(_mm256_sub_ps(_mm256_loadu_ps(row + j), shift));
      sum = _mm256_add_ps(sum, e);
      _mm256_storeu_ps(row + j, e);
    }
    inv_sum[r] = 1.0f / ReduceAdd(sum);
  }
}

// out[r] = inv_sum[r] * sum_j weights[r][j] v_j for R rows: R x NV accumulators, one broadcast
// weight against the NV vectors of a value row per step.
template <int R, int NV>
LONGQA_AVX2 inline void WeightedSum(const float* weights, const Head& h, const float* inv_sum,
                                    float* out) {
  __m256 acc[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_ps();
  }
  for (int64_t j = 0; j < h.t; ++j) {
    __m256 value[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) value[v] = _mm256_loadu_ps(h.v + j * h.v_ld + 8 * v);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 weight = _mm256_broadcast_ss(weights + r * h.tp + j);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_fmadd_ps(weight, value[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m256 inv = _mm256_set1_ps(inv_sum[r]);
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      _mm256_storeu_ps(out + r * h.out_ld + 8 * v, _mm256_mul_ps(acc[r][v], inv));
    }
  }
}

// Rows of the weighted sum's kernel: R x W accumulators, the W vectors of a value row and a
// broadcast weight within the 16 registers (measured: 2 rows of 4 vectors, 13 registers, beat 3
// rows whose 17 made the compiler load every value once a row).
constexpr int SumRowsFor(int w) { return std::min(kRows, std::max(1, (15 - w) / w)); }

// WeightedSum for `rows` <= R rows (a kernel of each size: the accumulators are registers).
template <int W, int R>
LONGQA_AVX2 void WeightedSumOf(int rows, const float* weights, const Head& h, const float* inv_sum,
                               float* out) {
  if constexpr (R > 1) {
    if (rows < R) return WeightedSumOf<W, R - 1>(rows, weights, h, inv_sum, out);
  }
  WeightedSum<R, W>(weights, h, inv_sum, out);
}

// The weighted sum of R rows for the W vectors of features from `first` (a slice of the head):
// at most 4 vectors a slice, so that each value load serves SumRowsFor(W) >= 2 rows.
template <int W, int R>
LONGQA_AVX2 void SumSlice(const float* scores, const Head& h, const float* inv_sum, int64_t i0,
                          int first) {
  constexpr int S = SumRowsFor(W);
  Head slice = h;
  slice.v = h.v + 8 * first;
  for (int r = 0; r < R; r += S) {
    WeightedSumOf<W, S>(std::min(S, R - r), scores + r * h.tp, slice, inv_sum + r,
                        h.out + (i0 + r) * h.out_ld + 8 * first);
  }
}

// Query rows [i0, i0 + R) of one head: scores (in L1), softmax, weighted sum into the context.
template <int NV, int R>
LONGQA_AVX2 void RowBlock(const Head& h, int64_t i0, Scratch& w) {
  constexpr int64_t dh = 8 * NV;
  const __m256 scale = _mm256_set1_ps(1.0f / std::sqrt(static_cast<float>(dh)));
  const float* q = h.q + i0 * h.ld;
  float* scores = w.scores.data();
  int64_t j = 0;
  for (; j + 16 <= h.tp; j += 16) {
    ScoreTile<R, 2>(q, h.ld, w.kt.data(), h.tp, dh, scale, w.bias.data(), scores, j);
  }
  if (j < h.tp) ScoreTile<R, 1>(q, h.ld, w.kt.data(), h.tp, dh, scale, w.bias.data(), scores, j);
  ExpRows(scores, R, h.tp, w.inv_sum.data());
  for (int first = 0; first + 4 <= NV; first += 4) {
    SumSlice<4, R>(scores, h, w.inv_sum.data(), i0, first);
  }
  if constexpr (NV % 4 != 0) SumSlice<NV % 4, R>(scores, h, w.inv_sum.data(), i0, NV / 4 * 4);
}

template <int NV, int R>
LONGQA_AVX2 void RowBlockOf(int rows, const Head& h, int64_t i0, Scratch& w) {
  if constexpr (R > 1) {
    if (rows < R) return RowBlockOf<NV, R - 1>(rows, h, i0, w);
  }
  RowBlock<NV, R>(h, i0, w);
}

template <int NV>
LONGQA_AVX2 void AttendHead(const Head& h, Scratch& w) {
  for (int64_t i0 = 0; i0 < h.t; i0 += kRows) {
    RowBlockOf<NV, kRows>(static_cast<int>(std::min<int64_t>(kRows, h.t - i0)), h, i0, w);
  }
}

LONGQA_AVX2 void AttendHeadOfWidth(int64_t nv, const Head& h, Scratch& w) {
  switch (nv) {
    case 1:
      return AttendHead<1>(h, w);
    case 2:
      return AttendHead<2>(h, w);
    case 3:
      return AttendHead<3>(h, w);
    case 4:
      return AttendHead<4>(h, w);
    case 5:
      return AttendHead<5>(h, w);
    case 6:
      return AttendHead<6>(h, w);
    case 7:
      return AttendHead<7>(h, w);
    case 8:
      return AttendHead<8>(h, w);
    default:
      throw std::logic_error("Avx2WindowAttention: head width not supported");
  }
}

}  // namespace

bool Avx2AttentionAvailable() {
  static const bool available = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return available;
}

bool Avx2AttentionTakesHeadWidth(int64_t dh) { return dh > 0 && dh % 8 == 0 && dh <= 64; }

void Avx2WindowAttention(const float* qkv, const bool* valid, int64_t b, int64_t t, int64_t d,
                         int64_t heads, float* out) {
  const int64_t dh = d / heads;
  if (!Avx2AttentionAvailable() || !Avx2AttentionTakesHeadWidth(dh) || dh * heads != d) {
    throw std::logic_error("Avx2WindowAttention: not an input of this form");
  }
  const int64_t tp = (t + 7) / 8 * 8;
  at::parallel_for(0, b * heads, 1, [&](int64_t begin, int64_t end) {
    Scratch w;
    w.kt.resize(dh * tp);
    w.v.resize(t * dh);
    w.scores.resize(kRows * tp);
    w.bias.resize(tp);
    w.inv_sum.resize(kRows);
    for (int64_t job = begin; job < end; ++job) {
      const int64_t window = job / heads, head = job % heads;
      const float* rows = qkv + window * t * 3 * d + head * dh;
      PackKeysTransposed(rows + d, 3 * d, t, tp, dh, w.kt.data());
      FillKeyBias(valid + window * t, t, tp, w.bias.data());
      for (int64_t j = 0; j < t; ++j) {
        std::copy_n(rows + 2 * d + j * 3 * d, dh, w.v.data() + j * dh);
      }
      const Head h{rows, w.v.data(), 3 * d, dh, t, tp, out + window * t * d + head * dh, d};
      AttendHeadOfWidth(dh / 8, h, w);
    }
  });
}

}  // namespace longqa
