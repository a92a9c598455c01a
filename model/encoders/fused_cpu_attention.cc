#include "model/encoders/fused_cpu_attention.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "model/encoders/avx512_vector.h"
#include "model/encoders/fused_cpu_ops.h"

namespace longqa {
namespace {

constexpr int64_t kMaxVectorsPerHead = 8;  // dh up to 128
constexpr int kMaxRows = 8;

// Query rows a block: as many as keep the weighted sum's accumulators (rows x dh/16 vectors) and
// one row of values in the 32 vector registers.
constexpr int RowsFor(int nv) { return nv <= 2 ? 8 : nv <= 4 ? 6 : nv <= 6 ? 4 : nv == 7 ? 3 : 2; }

// One head of one window as the kernels read it: fp32 queries and values, rows `ld` floats apart
// (the stacked projection itself, or a task's fp32 copy of a bf16 head), t tokens, tp = t rounded
// up to 16; the context (fp32 or bf16: T) rows `out_ld` apart.
template <typename T>
struct Head {
  const float* q;
  const float* v;
  int64_t ld;
  int64_t t;
  int64_t tp;
  T* out;
  int64_t out_ld;
};

// A task's buffers: the keys transposed [dh][tp], a block of query rows' scores [rows][tp], the
// key bias [tp] and the rows' 1 / sum of exponentials; for bf16 heads, fp32 copies of the queries
// and values [t][dh] (converted once a head, not once a row block).
struct Scratch {
  std::vector<float> kt, scores, bias, inv_sum, q, v;
};

// kt[c * tp + j] = K[j][c] in fp32, zero for the padding keys j >= t: the score kernel then reads
// 16 keys of one feature a load. K's rows are `ld` elements apart; gathered 16 keys at a time
// (masked: nothing past key t is read); bf16 keys two features a gather (32 bits: feature c in
// the low half, c + 1 in the high half).
template <typename T>
LONGQA_AVX512 void PackKeysTransposed(const T* k, int64_t ld, int64_t t, int64_t tp, int64_t dh,
                                      float* kt) {
  const __m512i offsets =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int>(ld * static_cast<int64_t>(sizeof(T)))));
  for (int64_t j = 0; j < tp; j += 16) {
    const __mmask16 m = simd::Lanes(t - j);  // j < tp, so at least one key left
    const T* keys = k + j * ld;
    if constexpr (std::is_same_v<T, float>) {
      for (int64_t c = 0; c < dh; ++c) {
        _mm512_storeu_ps(kt + c * tp + j,
                         _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, offsets, keys + c, 1));
      }
    } else {
      for (int64_t c = 0; c < dh; c += 2) {  // dh is even
        const __m512i pair =
            _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, offsets, keys + c, 1);
        _mm512_storeu_ps(kt + c * tp + j, _mm512_castsi512_ps(_mm512_slli_epi32(pair, 16)));
        _mm512_storeu_ps(kt + (c + 1) * tp + j,
                         _mm512_castsi512_ps(_mm512_and_si512(pair, _mm512_set1_epi32(-65536))));
      }
    }
  }
}

// rows [t][dh] of bf16, `ld` apart, into contiguous fp32.
LONGQA_AVX512 void ToFloatRows(const at::BFloat16* in, int64_t ld, int64_t t, int64_t dh,
                               float* out) {
  for (int64_t j = 0; j < t; ++j) {
    for (int64_t c = 0; c < dh; c += 16) {
      _mm512_storeu_ps(out + j * dh + c, simd::Load(in + j * ld + c, 0xffff));
    }
  }
}

// scores[r][j, j + 16 NJ) = scale (q_r . k_j) + bias_j for R query rows: R x NJ accumulators,
// one broadcast of a query feature against NJ vectors of keys per step.
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

// In place: each of `rows` rows of scores becomes e^(score - its max); inv_sum[r] = 1 / the row's
// sum (applied to the weighted sum's R x dh outputs instead of the R x T weights).
LONGQA_AVX512 void ExpRows(float* scores, int rows, int64_t tp, float* inv_sum) {
  for (int r = 0; r < rows; ++r) {
    float* row = scores + r * tp;
    __m512 most = _mm512_set1_ps(-INFINITY);
    for (int64_t j = 0; j < tp; j += 16) most = _mm512_max_ps(most, _mm512_loadu_ps(row + j));
    const __m512 shift = _mm512_set1_ps(_mm512_reduce_max_ps(most));
    __m512 sum = _mm512_setzero_ps();
    for (int64_t j = 0; j < tp; j += 16) {
      const __m512 e = simd::ExpNonPositive(_mm512_sub_ps(_mm512_loadu_ps(row + j), shift));
      sum = _mm512_add_ps(sum, e);
      _mm512_storeu_ps(row + j, e);
    }
    inv_sum[r] = 1.0f / _mm512_reduce_add_ps(sum);
  }
}

// out[r] = inv_sum[r] * sum_j weights[r][j] v_j for R rows: R x NV accumulators, one broadcast
// weight against the NV vectors of a value row per step.
template <int R, int NV, typename T>
LONGQA_AVX512 inline void WeightedSum(const float* weights, const Head<T>& h, const float* inv_sum,
                                      T* out) {
  __m512 acc[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int64_t j = 0; j < h.t; ++j) {
    __m512 value[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) value[v] = _mm512_loadu_ps(h.v + j * h.ld + 16 * v);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 weight = _mm512_set1_ps(weights[r * h.tp + j]);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(weight, value[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m512 inv = _mm512_set1_ps(inv_sum[r]);
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      simd::Store(out + r * h.out_ld + 16 * v, _mm512_mul_ps(acc[r][v], inv), 0xffff);
    }
  }
}

// Query rows [i0, i0 + R) of one head: scores (in L1), softmax, weighted sum into the context.
template <int NV, int R, typename T>
LONGQA_AVX512 void RowBlock(const Head<T>& h, int64_t i0, Scratch& w) {
  constexpr int64_t dh = 16 * NV;
  const __m512 scale = _mm512_set1_ps(1.0f / std::sqrt(static_cast<float>(dh)));
  const float* q = h.q + i0 * h.ld;
  float* scores = w.scores.data();
  int64_t j = 0;
  for (; j + 48 <= h.tp; j += 48) {
    ScoreTile<R, 3>(q, h.ld, w.kt.data(), h.tp, dh, scale, w.bias.data(), scores, j);
  }
  if (h.tp - j == 32)
    ScoreTile<R, 2>(q, h.ld, w.kt.data(), h.tp, dh, scale, w.bias.data(), scores, j);
  if (h.tp - j == 16)
    ScoreTile<R, 1>(q, h.ld, w.kt.data(), h.tp, dh, scale, w.bias.data(), scores, j);
  ExpRows(scores, R, h.tp, w.inv_sum.data());
  WeightedSum<R, NV>(scores, h, w.inv_sum.data(), h.out + i0 * h.out_ld);
}

// RowBlock for the last block's `rows` < R rows too (a kernel of each size, as the accumulators
// are registers).
template <int NV, int R, typename T>
LONGQA_AVX512 void RowBlockOf(int rows, const Head<T>& h, int64_t i0, Scratch& w) {
  if constexpr (R > 1) {
    if (rows < R) return RowBlockOf<NV, R - 1>(rows, h, i0, w);
  }
  RowBlock<NV, R>(h, i0, w);
}

// One head: rows q, k, v of the stacked projection (`ld` apart), the context to `out`.
template <int NV, typename T>
LONGQA_AVX512 void AttendHead(const T* q, const T* k, const T* v, int64_t ld, int64_t t, int64_t tp,
                              const bool* valid, T* out, int64_t out_ld, Scratch& w) {
  constexpr int64_t dh = 16 * NV;
  PackKeysTransposed(k, ld, t, tp, dh, w.kt.data());
  // LibTorch's path adds -1e30 for a padding key (so a window without valid keys averages all its
  // values, as there); the keys past t are -inf, never attended to.
  for (int64_t j = 0; j < t; ++j) w.bias[j] = valid[j] ? 0.0f : -1e30f;
  for (int64_t j = t; j < tp; ++j) w.bias[j] = -INFINITY;
  Head<T> h{nullptr, nullptr, ld, t, tp, out, out_ld};
  if constexpr (std::is_same_v<T, float>) {
    h.q = q;
    h.v = v;
  } else {
    ToFloatRows(q, ld, t, dh, w.q.data());
    ToFloatRows(v, ld, t, dh, w.v.data());
    h = Head<T>{w.q.data(), w.v.data(), dh, t, tp, out, out_ld};
  }
  constexpr int R = RowsFor(NV);
  for (int64_t i0 = 0; i0 < t; i0 += R) {
    RowBlockOf<NV, R>(static_cast<int>(std::min<int64_t>(R, t - i0)), h, i0, w);
  }
}

template <typename T, typename... Args>
LONGQA_AVX512 void AttendHeadOfWidth(int64_t nv, const T* q, Args&&... args) {
  switch (nv) {
    case 1:
      return AttendHead<1>(q, args...);
    case 2:
      return AttendHead<2>(q, args...);
    case 3:
      return AttendHead<3>(q, args...);
    case 4:
      return AttendHead<4>(q, args...);
    case 5:
      return AttendHead<5>(q, args...);
    case 6:
      return AttendHead<6>(q, args...);
    case 7:
      return AttendHead<7>(q, args...);
    case 8:
      return AttendHead<8>(q, args...);
    default:
      throw std::logic_error("FusedWindowAttention: head width not supported");
  }
}

}  // namespace

bool FusedWindowAttentionApplies(const at::Tensor& qkv, int64_t heads) {
  if (!FusedCpuOpsAvailable() || !qkv.defined() || !qkv.is_cpu() ||
      (qkv.scalar_type() != at::kFloat && qkv.scalar_type() != at::kBFloat16) ||
      !qkv.is_contiguous() || qkv.requires_grad() || qkv.dim() != 3 || heads <= 0 ||
      qkv.size(2) % (3 * heads) != 0) {
    return false;
  }
  const int64_t dh = qkv.size(2) / (3 * heads);
  return dh > 0 && dh % 16 == 0 && dh / 16 <= kMaxVectorsPerHead &&
         qkv.size(2) * 16 < (int64_t{1} << 31);  // the gather's int32 offsets
}

at::Tensor FusedWindowAttention(const at::Tensor& qkv, const at::Tensor& valid, int64_t heads) {
  if (!FusedWindowAttentionApplies(qkv, heads)) {
    throw std::invalid_argument("FusedWindowAttention: not an input of the fused path");
  }
  const int64_t b = qkv.size(0), t = qkv.size(1), d = qkv.size(2) / 3, dh = d / heads;
  if (valid.dim() != 2 || valid.size(0) != b || valid.size(1) != t) {
    throw std::invalid_argument("FusedWindowAttention: valid must be [B, T]");
  }
  at::Tensor out = at::empty({b, t, d}, qkv.options());
  if (out.numel() == 0) return out;
  const at::Tensor valid_bool = valid.to(at::kCPU).to(at::kBool).contiguous();
  const bool* valid_data = valid_bool.data_ptr<bool>();
  const int64_t tp = (t + 15) / 16 * 16;
  const auto attend = [&](const auto* in, auto* context) {
    at::parallel_for(0, b * heads, 1, [&](int64_t begin, int64_t end) {
      Scratch w;
      w.kt.resize(dh * tp);
      w.scores.resize(kMaxRows * tp);
      w.bias.resize(tp);
      w.inv_sum.resize(kMaxRows);
      if (qkv.scalar_type() != at::kFloat) {
        w.q.resize(t * dh);
        w.v.resize(t * dh);
      }
      for (int64_t job = begin; job < end; ++job) {
        const int64_t window = job / heads, head = job % heads;
        const auto* rows = in + window * t * 3 * d + head * dh;
        AttendHeadOfWidth(dh / 16, rows, rows + d, rows + 2 * d, 3 * d, t, tp,
                          valid_data + window * t, context + window * t * d + head * dh, d, w);
      }
    });
  };
  if (qkv.scalar_type() == at::kFloat) {
    attend(qkv.data_ptr<float>(), out.data_ptr<float>());
  } else {
    attend(qkv.data_ptr<at::BFloat16>(), out.data_ptr<at::BFloat16>());
  }
  return out;
}

}  // namespace longqa
