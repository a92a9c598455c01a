// The AVX-512 pieces of a fused attention pass on the CPU, shared by the window attention
// (fused_cpu_attention.cc) and ETC's blocked attention (fused_etc_attention.cc): keys packed
// transposed, a tile of query rows' scores, the softmax numerators in place, and the weighted sum
// of value rows into register accumulators: fp32 FMAs, and (below) AVX512_BF16 dot products for
// bf16 heads or fp32 heads rounded to bf16. Include only from .cc files whose AVX-512 code runs
// after FusedCpuOpsAvailable()'s check (avx512_vector.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "model/encoders/avx512_vector.h"
#include "model/encoders/vector_count_dispatch.h"

namespace longqa::attention_tiles {

// Byte offsets of 16 rows `ld` elements of T apart: the gathers' index vector.
template <typename T>
LONGQA_AVX512 inline __m512i RowOffsets(int64_t ld) {
  return _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32(static_cast<int>(ld * static_cast<int64_t>(sizeof(T)))));
}

// kt[c * tp + col0 + j] = K[j][c] in fp32 for the `count` keys j of K (rows `ld` elements apart),
// and zero for the columns [col0 + count, col0 + round16(count)): the score tile then reads 16 keys
// of one feature a load. Gathered 16 keys at a time (masked: nothing past key `count` is read);
// bf16 keys two features a gather (32 bits: feature c in the low half, c + 1 in the high half).
// The caller's tp leaves room for the rounded-up columns.
template <typename T>
LONGQA_AVX512 inline void PackKeysTransposed(const T* k, int64_t ld, int64_t count, int64_t dh,
                                             float* kt, int64_t tp, int64_t col0 = 0) {
  const __m512i offsets = RowOffsets<T>(ld);
  for (int64_t j = 0; j < count; j += 16) {
    const __mmask16 m = simd::Lanes(count - j);
    const T* keys = k + j * ld;
    float* column = kt + col0 + j;
    if constexpr (std::is_same_v<T, float>) {
      for (int64_t c = 0; c < dh; ++c) {
        _mm512_storeu_ps(column + c * tp,
                         _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, offsets, keys + c, 1));
      }
    } else {
      for (int64_t c = 0; c < dh; c += 2) {  // dh is even
        const __m512i pair =
            _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, offsets, keys + c, 1);
        _mm512_storeu_ps(column + c * tp, _mm512_castsi512_ps(_mm512_slli_epi32(pair, 16)));
        _mm512_storeu_ps(column + (c + 1) * tp,
                         _mm512_castsi512_ps(_mm512_and_si512(pair, _mm512_set1_epi32(-65536))));
      }
    }
  }
}

// rows [t][dh] of bf16, `ld` apart, into contiguous fp32.
LONGQA_AVX512 inline void ToFloatRows(const at::BFloat16* in, int64_t ld, int64_t t, int64_t dh,
                                      float* out) {
  for (int64_t j = 0; j < t; ++j) {
    for (int64_t c = 0; c < dh; c += 16) {
      _mm512_storeu_ps(out + j * dh + c, simd::Load(in + j * ld + c, 0xffff));
    }
  }
}

// scores[r][j + 16 v ...] = scale acc[r][v] + bias: a score tile's epilogue.
template <int R, int NJ>
LONGQA_AVX512 inline void StoreScores(const __m512 (&acc)[R][NJ], __m512 scale, const float* bias,
                                      float* scores, int64_t tp, int64_t j) {
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 3
    for (int v = 0; v < NJ; ++v) {
      const int64_t at = j + 16 * v;
      _mm512_storeu_ps(scores + r * tp + at,
                       _mm512_fmadd_ps(acc[r][v], scale, _mm512_loadu_ps(bias + at)));
    }
  }
}

// scores[r][j, j + 16 NJ) = scale (q_r . k_j) + bias_j for R query rows (`ld` apart), keys packed
// by PackKeysTransposed: R x NJ accumulators, one broadcast of a query feature against NJ vectors
// of keys per step.
template <int R, int NJ>
LONGQA_AVX512 inline void ScoreTile(const float* q, int64_t ld, const float* kt, int64_t tp,
                                    int64_t dh, __m512 scale, const float* bias, float* scores,
                                    int64_t j) {
  __m512 acc[R][NJ];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 3
    for (int v = 0; v < NJ; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int64_t c = 0; c < dh; ++c) {
    __m512 key[NJ];
#pragma GCC unroll 3
    for (int v = 0; v < NJ; ++v) key[v] = _mm512_loadu_ps(kt + c * tp + j + 16 * v);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 feature = _mm512_set1_ps(q[r * ld + c]);
#pragma GCC unroll 3
      for (int v = 0; v < NJ; ++v) acc[r][v] = _mm512_fmadd_ps(feature, key[v], acc[r][v]);
    }
  }
  StoreScores<R, NJ>(acc, scale, bias, scores, tp, j);
}

// ScoreTile over the columns [0, tp) (tp a multiple of 16): three vectors of keys a step, then
// the rest.
template <int R>
LONGQA_AVX512 inline void ScoreRows(const float* q, int64_t ld, const float* kt, int64_t tp,
                                    int64_t dh, __m512 scale, const float* bias, float* scores) {
  int64_t j = 0;
  for (; j + 48 <= tp; j += 48) ScoreTile<R, 3>(q, ld, kt, tp, dh, scale, bias, scores, j);
  if (tp - j == 32) ScoreTile<R, 2>(q, ld, kt, tp, dh, scale, bias, scores, j);
  if (tp - j == 16) ScoreTile<R, 1>(q, ld, kt, tp, dh, scale, bias, scores, j);
}

// The largest of a row of tp scores (tp a multiple of 16).
LONGQA_AVX512 inline float RowMax(const float* row, int64_t tp) {
  __m512 most = _mm512_set1_ps(-INFINITY);
  for (int64_t j = 0; j < tp; j += 16) most = _mm512_max_ps(most, _mm512_loadu_ps(row + j));
  return _mm512_reduce_max_ps(most);
}

// A run of fp32 value rows (`ld` apart) and the weights' column of its first row.
struct ValueRows {
  const float* v;
  int64_t ld;
  int64_t count;
  int64_t col0;
};

// R x NV accumulators += sum over the runs' rows j of weights[r][col0 + j] v_j (weights `wld`
// apart): one broadcast weight against the NV vectors of a value row per step.
template <int R, int NV, size_t N>
LONGQA_AVX512 inline void SumValueRows(const float* weights, int64_t wld,
                                       const ValueRows (&runs)[N], __m512 (&acc)[R][NV]) {
  for (const ValueRows& run : runs) {
    for (int64_t j = 0; j < run.count; ++j) {
      __m512 value[NV];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) value[v] = _mm512_loadu_ps(run.v + j * run.ld + 16 * v);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512 weight = _mm512_set1_ps(weights[r * wld + run.col0 + j]);
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(weight, value[v], acc[r][v]);
      }
    }
  }
}

// ---- bf16 heads: VDPBF16PS (AVX512_BF16), two features or two keys a multiply-add ----
// Operands are pairs of bf16 in 32 bits (the even element in the low half): a query's features
// (c, c + 1) against 16 keys' same pair; a row's weights for keys (j, j + 1) against 16 features
// of both keys' values. Products are summed in fp32; the attention weights are rounded to bf16
// (as LibTorch's bf16 path and the AMX form round them); the rows' sums stay fp32.

#define LONGQA_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))

// kp[(c / 2) * tp + col0 + j] = K[j][c] | K[j][c + 1] << 16 for the `count` keys j of K (rows
// `ld` apart), zero pairs for the columns up to col0 + round16(count).
LONGQA_AVX512_BF16 inline void PackKeyPairs(const at::BFloat16* k, int64_t ld, int64_t count,
                                            int64_t dh, uint32_t* kp, int64_t tp,
                                            int64_t col0 = 0) {
  const __m512i offsets = RowOffsets<at::BFloat16>(ld);
  for (int64_t j = 0; j < count; j += 16) {
    const __mmask16 m = simd::Lanes(count - j);
    for (int64_t c = 0; c < dh; c += 2) {
      _mm512_storeu_si512(
          kp + (c / 2) * tp + col0 + j,
          _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, offsets, k + j * ld + c, 1));
    }
  }
}

// PackKeyPairs for fp32 keys, each rounded to bf16 (nearest even) as it is packed: fp32 heads
// multiplied by dot products (the int8 layers' attention).
LONGQA_AVX512_BF16 inline void PackKeyPairs(const float* k, int64_t ld, int64_t count, int64_t dh,
                                            uint32_t* kp, int64_t tp, int64_t col0 = 0) {
  const __m512i offsets = RowOffsets<float>(ld);
  for (int64_t j = 0; j < count; j += 16) {
    const __mmask16 m = simd::Lanes(count - j);
    for (int64_t c = 0; c < dh; c += 2) {
      const float* keys = k + j * ld + c;
      const __m512 even = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, offsets, keys, 1);
      const __m512 odd = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, offsets, keys + 1, 1);
      const __m512i low = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(even));
      const __m512i high = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(odd));
      _mm512_storeu_si512(kp + (c / 2) * tp + col0 + j,
                          _mm512_or_si512(low, _mm512_slli_epi32(high, 16)));
    }
  }
}

// `rows` rows of dh fp32 (`ld` apart; dh a multiple of 16) rounded to bf16 into out (dh apart).
LONGQA_AVX512_BF16 inline void RowsToBf16(const float* x, int64_t ld, int rows, int64_t dh,
                                          at::BFloat16* out) {
  for (int r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < dh; c += 16) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + r * dh + c),
                          (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(x + r * ld + c)));
    }
  }
}

// 16 values of row j from feature f, zero-extended to 32 bits; zero for the rows past count.
LONGQA_AVX512_BF16 inline __m512i ValueRowBits(const at::BFloat16* v, int64_t ld, int64_t count,
                                               int64_t j, int64_t f) {
  if (j >= count) return _mm512_setzero_si512();
  return _mm512_cvtepu16_epi32(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + j * ld + f)));
}

// The same for fp32 values, rounded to bf16 (nearest even).
LONGQA_AVX512_BF16 inline __m512i ValueRowBits(const float* v, int64_t ld, int64_t count, int64_t j,
                                               int64_t f) {
  if (j >= count) return _mm512_setzero_si512();
  return _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(v + j * ld + f)));
}

// vp[(j / 2) * dh + f] = V[j][f] | V[j + 1][f] << 16 for the `count` value rows (`ld` apart; bf16,
// or fp32 rounded to bf16); the missing row of an odd count is zero.
template <typename T>
LONGQA_AVX512_BF16 inline void PackValuePairs(const T* v, int64_t ld, int64_t count, int64_t dh,
                                              uint32_t* vp) {
  for (int64_t j = 0; j < count; j += 2) {
    for (int64_t f = 0; f < dh; f += 16) {
      _mm512_storeu_si512(
          vp + (j / 2) * dh + f,
          _mm512_or_si512(ValueRowBits(v, ld, count, j, f),
                          _mm512_slli_epi32(ValueRowBits(v, ld, count, j + 1, f), 16)));
    }
  }
}

// Pair c of a bf16 row, broadcast.
LONGQA_AVX512_BF16 inline __m512bh PairOf(const at::BFloat16* row, int64_t c) {
  uint32_t bits;
  std::memcpy(&bits, row + c, sizeof(bits));
  return (__m512bh)_mm512_set1_epi32(static_cast<int>(bits));
}

// ScoreTile for bf16 query rows (`ld` apart) and keys packed by PackKeyPairs.
template <int R, int NJ>
LONGQA_AVX512_BF16 inline void ScoreTileBf16(const at::BFloat16* q, int64_t ld, const uint32_t* kp,
                                             int64_t tp, int64_t dh, __m512 scale,
                                             const float* bias, float* scores, int64_t j) {
  __m512 acc[R][NJ];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 3
    for (int v = 0; v < NJ; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int64_t c = 0; c < dh; c += 2) {
    __m512bh key[NJ];
#pragma GCC unroll 3
    for (int v = 0; v < NJ; ++v)
      key[v] = (__m512bh)_mm512_loadu_si512(kp + (c / 2) * tp + j + 16 * v);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512bh pair = PairOf(q + r * ld, c);
#pragma GCC unroll 3
      for (int v = 0; v < NJ; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], pair, key[v]);
    }
  }
  StoreScores<R, NJ>(acc, scale, bias, scores, tp, j);
}

template <int R>
LONGQA_AVX512_BF16 inline void ScoreRowsBf16(const at::BFloat16* q, int64_t ld, const uint32_t* kp,
                                             int64_t tp, int64_t dh, __m512 scale,
                                             const float* bias, float* scores) {
  int64_t j = 0;
  for (; j + 48 <= tp; j += 48) ScoreTileBf16<R, 3>(q, ld, kp, tp, dh, scale, bias, scores, j);
  if (tp - j == 32) ScoreTileBf16<R, 2>(q, ld, kp, tp, dh, scale, bias, scores, j);
  if (tp - j == 16) ScoreTileBf16<R, 1>(q, ld, kp, tp, dh, scale, bias, scores, j);
}

// One row of softmax numerators: out[j] = e^(row[j] - shift) for tp scores (a multiple of 16), in
// fp32 (W float; out may be the row itself) or bf16 rounded to nearest even as they are made (W
// at::BFloat16: no fp32 copy stored and read back). Returns the sum of the fp32 numerators.
template <typename W>
LONGQA_AVX512_BF16 inline float ExpRow(const float* row, int64_t tp, float shift, W* out) {
  const __m512 by = _mm512_set1_ps(shift);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < tp; j += 16) {
    const __m512 e = simd::ExpNonPositive(_mm512_sub_ps(_mm512_loadu_ps(row + j), by));
    sum = _mm512_add_ps(sum, e);
    if constexpr (std::is_same_v<W, float>) {
      _mm512_storeu_ps(out + j, e);
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), (__m256i)_mm512_cvtneps_pbh(e));
    }
  }
  return _mm512_reduce_add_ps(sum);
}

// ExpRow with each row's own max for `rows` rows of scores [rows][tp] into weights [rows][tp]
// (the scores themselves, in place, or bf16); inv_sum[r] = 1 / the row's sum (applied to the
// weighted sum's R x dh outputs instead of the R x T weights).
template <typename W>
LONGQA_AVX512_BF16 inline void ExpRows(const float* scores, int rows, int64_t tp, float* inv_sum,
                                       W* weights) {
  for (int r = 0; r < rows; ++r) {
    const float* row = scores + r * tp;
    inv_sum[r] = 1.0f / ExpRow(row, tp, RowMax(row, tp), weights + r * tp);
  }
}

// A run of value rows packed by PackValuePairs, and the weights' column of its first row (even).
struct ValuePairs {
  const uint32_t* vp;
  int64_t count;
  int64_t col0;
};

// SumValueRows for bf16 weights (`wld` apart) and value pairs: R x NV accumulators += sum over
// the runs' rows j of weights[r][col0 + j] v_j (a run's odd last row pairs with a zero value).
template <int R, int NV, size_t N>
LONGQA_AVX512_BF16 inline void SumValueRows(const at::BFloat16* weights, int64_t wld,
                                            const ValuePairs (&runs)[N], __m512 (&acc)[R][NV]) {
  constexpr int64_t dh = 16 * NV;
  for (const ValuePairs& run : runs) {
    for (int64_t j = 0; j < run.count; j += 2) {
      __m512bh value[NV];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) {
        value[v] = (__m512bh)_mm512_loadu_si512(run.vp + (j / 2) * dh + 16 * v);
      }
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512bh pair = PairOf(weights + r * wld, run.col0 + j);
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], pair, value[v]);
      }
    }
  }
}

// out[r] = inv_sum[r] * sum over the runs' rows j of weights[r][col0 + j] v_j for R rows (weights
// `wld` apart, out `out_ld` apart, fp32 or bf16): fp32 weights and ValueRows in fp32 FMAs, or
// bf16 weights and ValuePairs by dot products (SumValueRows' two forms).
template <int R, int NV, typename W, typename Run, typename T, size_t N>
LONGQA_AVX512_BF16 inline void WeightedSum(const W* weights, int64_t wld, const Run (&runs)[N],
                                           const float* inv_sum, T* out, int64_t out_ld) {
  __m512 acc[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  SumValueRows<R, NV>(weights, wld, runs, acc);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m512 inv = _mm512_set1_ps(inv_sum[r]);
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      simd::Store(out + r * out_ld + 16 * v, _mm512_mul_ps(acc[r][v], inv), 0xffff);
    }
  }
}

// The online softmax's step (flash attention) for R rows: acc[r] = alpha[r] acc[r] + sum over
// the run's rows j of weights[r][col0 + j] v_j, acc fp32 rows `acc_ld` apart (weights and run as
// WeightedSum's).
template <int R, int NV, typename W, typename Run>
LONGQA_AVX512_BF16 inline void AccumulateWeightedSum(const W* weights, int64_t wld, const Run& run,
                                                     const float* alpha, float* acc_rows,
                                                     int64_t acc_ld) {
  __m512 acc[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m512 keep = _mm512_set1_ps(alpha[r]);
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      acc[r][v] = _mm512_mul_ps(keep, _mm512_loadu_ps(acc_rows + r * acc_ld + 16 * v));
    }
  }
  const Run runs[] = {run};
  SumValueRows<R, NV>(weights, wld, runs, acc);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(acc_rows + r * acc_ld + 16 * v, acc[r][v]);
  }
}

// The 16-float vectors of the widest head the AVX-512 attention kernels take (dh 128).
inline constexpr int64_t kMaxVectorsPerHead = 8;

// Calls f(std::integral_constant<int, NV>{}) for NV = nv, the 16-float vectors of a head (1 to
// kMaxVectorsPerHead: dh 16 to 128), so that a kernel's accumulators can be sized at compile time.
template <typename F>
inline void ForVectorsPerHead(int64_t nv, F&& f) {
  ForVectorCount<kMaxVectorsPerHead>(nv, "fused attention: heads of 16 to 128 features only", f);
}

// Query rows a block: as many as keep the weighted sum's accumulators (rows x dh/16 vectors) and
// one row of values in the 32 vector registers.
constexpr int RowsFor(int nv) { return nv <= 2 ? 8 : nv <= 4 ? 6 : nv <= 6 ? 4 : nv == 7 ? 3 : 2; }
constexpr int kMaxRows = 8;

}  // namespace longqa::attention_tiles
