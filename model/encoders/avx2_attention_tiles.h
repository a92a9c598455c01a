// The AVX2 + FMA pieces of a fused attention pass on CPUs without AVX-512 (AMD Zen 2/3, Intel
// client CPUs), shared by the window attention (fused_cpu_attention_avx2.cc) and ETC's blocked
// attention (fused_etc_attention_avx2.cc), as avx512_attention_tiles.h is for AVX-512: keys packed
// transposed, a tile of query rows' scores, the softmax numerators in place, and the weighted sum
// of value rows into register accumulators. fp32 throughout. Only 16 vector registers: a score
// tile is 6 rows x 16 keys, and the weighted sum runs a head's features in slices of at most 4
// vectors. Include only from .cc files whose AVX2 code runs after Avx2AttentionAvailable()'s check
// (fused_cpu_attention_avx2.h); the rest of the project is built for the baseline x86-64.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "model/encoders/vector_count_dispatch.h"

#define LONGQA_AVX2 __attribute__((target("avx2,fma")))

namespace longqa::avx2_tiles {

// Query rows a block: the score tile's 6 rows x 16 keys are 12 accumulators, plus 2 vectors of
// keys and a broadcast query feature: 15 of the 16 registers.
inline constexpr int kRows = 6;

inline int64_t Round8(int64_t n) { return (n + 7) / 8 * 8; }

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
// -1e30 masked scores give 0 as there). NaN stays NaN.
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

// kt[c * tp + col0 + j] = K[j][c] for the `count` keys j of K (rows `ld` floats apart), zero for
// the columns [col0 + count, col0 + round8(count)): the score tile then reads 8 keys of one
// feature a load. A plain loop (AVX2's gathers are slow on the CPUs this form is for); a head's
// keys are copied once against dh multiply-adds a key for each query row.
inline void PackKeysTransposed(const float* k, int64_t ld, int64_t count, int64_t dh, float* kt,
                               int64_t tp, int64_t col0 = 0) {
  for (int64_t j = 0; j < count; ++j) {
    for (int64_t c = 0; c < dh; ++c) kt[c * tp + col0 + j] = k[j * ld + c];
  }
  for (int64_t c = 0; c < dh; ++c) {
    std::fill(kt + c * tp + col0 + count, kt + c * tp + col0 + Round8(count), 0.0f);
  }
}

// scores[r][j, j + 8 NJ) = scale (q_r . k_j) + bias_j for R query rows (`ld` apart), keys packed
// by PackKeysTransposed: R x NJ accumulators, one broadcast of a query feature against NJ
// vectors of keys per step.
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

// ScoreTile over the columns [0, tp) (tp a multiple of 8): two vectors of keys a step, then the
// rest.
template <int R>
LONGQA_AVX2 inline void ScoreRows(const float* q, int64_t ld, const float* kt, int64_t tp,
                                  int64_t dh, __m256 scale, const float* bias, float* scores) {
  int64_t j = 0;
  for (; j + 16 <= tp; j += 16) ScoreTile<R, 2>(q, ld, kt, tp, dh, scale, bias, scores, j);
  if (j < tp) ScoreTile<R, 1>(q, ld, kt, tp, dh, scale, bias, scores, j);
}

// In place: each of `rows` rows of scores becomes e^(score - its max); inv_sum[r] = 1 / the row's
// sum (applied to the R x dh outputs instead of the R x T weights).
LONGQA_AVX2 inline void ExpRows(float* scores, int rows, int64_t tp, float* inv_sum) {
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

// A run of value rows (`ld` floats apart) and the weights' column of its first row.
struct ValueRows {
  const float* v;
  int64_t ld;
  int64_t count;
  int64_t col0;
};

// R x NV accumulators += sum over the runs' rows j of weights[r][col0 + j] v_j[first, first + 8 NV)
// (weights `wld` apart): one broadcast weight against the NV vectors of a value row per step.
template <int R, int NV, size_t N>
LONGQA_AVX2 inline void SumValueRows(const float* weights, int64_t wld, const ValueRows (&runs)[N],
                                     int64_t first, __m256 (&acc)[R][NV]) {
  for (const ValueRows& run : runs) {
    const float* v = run.v + first;
    for (int64_t j = 0; j < run.count; ++j) {
      __m256 value[NV];
#pragma GCC unroll 4
      for (int i = 0; i < NV; ++i) value[i] = _mm256_loadu_ps(v + j * run.ld + 8 * i);
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        const __m256 weight = _mm256_broadcast_ss(weights + r * wld + run.col0 + j);
#pragma GCC unroll 4
        for (int i = 0; i < NV; ++i) acc[r][i] = _mm256_fmadd_ps(weight, value[i], acc[r][i]);
      }
    }
  }
}

// Rows of the weighted sum's kernel: R x W accumulators, the W vectors of a value row and a
// broadcast weight within the 16 registers (measured: 2 rows of 4 vectors, 13 registers, beat 3
// rows whose 17 made the compiler load every value once a row).
constexpr int SumRowsFor(int w) { return std::min(kRows, std::max(1, (15 - w) / w)); }

// out[r][first, first + 8 W) = scale[r] * sum over the runs' rows j of weights[r][col0 + j]
// v_j[first, ...) for R rows, out `out_ld` apart; with `keep` (the online softmax's step),
// keep[r] * out[r] is added first (out then holds the running sums).
template <int R, int W, size_t N>
LONGQA_AVX2 inline void SumSliceRows(const float* weights, int64_t wld, const ValueRows (&runs)[N],
                                     int64_t first, const float* scale, const float* keep,
                                     float* out, int64_t out_ld) {
  __m256 acc[R][W];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int i = 0; i < W; ++i) {
      acc[r][i] = keep == nullptr ? _mm256_setzero_ps()
                                  : _mm256_mul_ps(_mm256_set1_ps(keep[r]),
                                                  _mm256_loadu_ps(out + r * out_ld + 8 * i));
    }
  }
  SumValueRows<R, W>(weights, wld, runs, first, acc);
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    const __m256 s = _mm256_set1_ps(scale == nullptr ? 1.0f : scale[r]);
#pragma GCC unroll 4
    for (int i = 0; i < W; ++i)
      _mm256_storeu_ps(out + r * out_ld + 8 * i, _mm256_mul_ps(acc[r][i], s));
  }
}

// SumSliceRows for `rows` <= R rows (a kernel of each size: the accumulators are registers).
template <int W, int R, size_t N>
LONGQA_AVX2 inline void SumSliceRowsOf(int rows, const float* weights, int64_t wld,
                                       const ValueRows (&runs)[N], int64_t first,
                                       const float* scale, const float* keep, float* out,
                                       int64_t out_ld) {
  if constexpr (R > 1) {
    if (rows < R) {
      return SumSliceRowsOf<W, R - 1>(rows, weights, wld, runs, first, scale, keep, out, out_ld);
    }
  }
  SumSliceRows<R, W>(weights, wld, runs, first, scale, keep, out, out_ld);
}

// The weighted sum of R rows over a head of 8 NV features, in slices of at most 4 vectors (so that
// each value load serves SumRowsFor(W) >= 2 rows): out[r] = scale[r] * sum_j weights[r][j] v_j
// (scale null: 1), plus keep[r] * out[r] when keep is not null.
template <int NV, int R, size_t N>
LONGQA_AVX2 inline void WeightedSum(const float* weights, int64_t wld, const ValueRows (&runs)[N],
                                    const float* scale, const float* keep, float* out,
                                    int64_t out_ld) {
  auto slice = [&](auto width, int64_t first) {
    constexpr int W = decltype(width)::value, S = SumRowsFor(W);
    for (int r = 0; r < R; r += S) {
      SumSliceRowsOf<W, S>(std::min(S, R - r), weights + r * wld, wld, runs, first,
                           scale == nullptr ? nullptr : scale + r,
                           keep == nullptr ? nullptr : keep + r, out + r * out_ld + first, out_ld);
    }
  };
  for (int first = 0; first + 4 <= NV; first += 4)
    slice(std::integral_constant<int, 4>{}, 8 * first);
  if constexpr (NV % 4 != 0) slice(std::integral_constant<int, NV % 4>{}, 8 * (NV / 4 * 4));
}

// The 8-float vectors of the widest head the AVX2 attention kernels take (dh 64).
inline constexpr int64_t kMaxVectorsPerHead = 8;

// Calls f(std::integral_constant<int, NV>{}) for NV = nv, the 8-float vectors of a head (1 to
// kMaxVectorsPerHead: dh 8 to 64).
template <typename F>
inline void ForVectorsPerHead(int64_t nv, F&& f) {
  ForVectorCount<kMaxVectorsPerHead>(nv, "AVX2 attention: heads of 8 to 64 features only", f);
}

}  // namespace longqa::avx2_tiles
