#include "model/encoders/fused_etc_attention.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "kernels/etc_score_bias.h"
#include "model/encoders/avx512_attention_tiles.h"
#include "model/encoders/avx512_vector.h"
#include "model/encoders/fused_cpu_attention_avx2.h"
#include "model/encoders/fused_cpu_ops.h"
#include "model/encoders/fused_etc_attention_avx2.h"
#include "model/encoders/fused_etc_common.h"

namespace longqa {
namespace {

using attention_tiles::kMaxRows;
using attention_tiles::kMaxVectorsPerHead;
using attention_tiles::RowsFor;
using etc_fused::Common;

int64_t Round16(int64_t n) { return (n + 15) / 16 * 16; }

// The long-query kernel's.
template <typename T>
struct Shared : Common<T> {
  // Score columns: n_g global ones, the local ones from g_cols = round16(n_g) (an even column, as
  // the bf16 weight pairs need), tp in all.
  int64_t g_cols, tp;
};

// A thread's buffers. kt holds the keys transposed (fp32 heads; kp their bf16 pairs for bf16
// heads): the head's global keys in columns [0, n_g) (packed when the head changes), the block's
// local keys in [g_cols, g_cols + 3b); column_bias is 0 on those columns, -inf elsewhere.
struct Scratch {
  std::vector<float> kt, relt, column_bias, zeros, scores, qa, inv_sum;
  std::vector<uint32_t> kp, relp, vpg, vpl;  // bf16 heads: key, label and value pairs
  std::vector<at::BFloat16> weights;         // bf16 heads: the rows' weights rounded to bf16
  std::vector<int32_t> slot_open;            // [3b]: 1 where the block's slot holds a long row
  int64_t head = -1;
};

// scores[j] += the membership term for keys key0 + j, j < count: "part of" for the keys in the
// row's own range [lo, hi) (none when lo < 0), "not part of" elsewhere; with mask_outside, a row
// that has a range scores the keys outside it kEtcMaskedScore (ETC's hard g2l mask).
LONGQA_AVX512 void AddMembership(float* scores, int64_t count, int64_t key0, int64_t lo, int64_t hi,
                                 float outside, float inside, bool mask_outside) {
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 not_own = _mm512_set1_ps(outside), own_term = _mm512_set1_ps(inside);
  const __m512 masked = _mm512_set1_ps(kernels::kEtcMaskedScore);
  for (int64_t j = 0; j < count; j += 16) {
    const __mmask16 m = simd::Lanes(count - j);
    const __m512i key = _mm512_add_epi32(lane, _mm512_set1_epi32(static_cast<int>(key0 + j)));
    const __mmask16 own =
        lo < 0 ? 0
               : _mm512_cmpge_epi32_mask(key, _mm512_set1_epi32(static_cast<int>(lo))) &
                     _mm512_cmplt_epi32_mask(key, _mm512_set1_epi32(static_cast<int>(hi)));
    __m512 sum = _mm512_add_ps(_mm512_maskz_loadu_ps(m, scores + j),
                               _mm512_mask_blend_ps(own, not_own, own_term));
    if (mask_outside && lo >= 0) sum = _mm512_mask_blend_ps(own, masked, sum);
    _mm512_mask_storeu_ps(scores + j, m, sum);
  }
}

// scores[j] += qa[labels[j]] for j < count; kEtcMaskedScore where the label is -1 or (when open
// is not null) open[j] is 0.
LONGQA_AVX512 void AddLabels(float* scores, int64_t count, const int32_t* labels,
                             const int32_t* open, const float* qa) {
  const __m512 masked = _mm512_set1_ps(kernels::kEtcMaskedScore);
  for (int64_t j = 0; j < count; j += 16) {
    const __mmask16 m = simd::Lanes(count - j);
    const __m512i label = _mm512_maskz_loadu_epi32(m, labels + j);
    __mmask16 valid = m & _mm512_cmpge_epi32_mask(label, _mm512_setzero_si512());
    if (open != nullptr) {
      valid &=
          _mm512_cmpneq_epi32_mask(_mm512_maskz_loadu_epi32(m, open + j), _mm512_setzero_si512());
    }
    const __m512 term = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), valid, label, qa, 4);
    const __m512 sum = _mm512_add_ps(_mm512_maskz_loadu_ps(m, scores + j), term);
    _mm512_mask_storeu_ps(scores + j, m, _mm512_mask_blend_ps(valid, masked, sum));
  }
}

// scores row r (query `row` of the request) += the membership term on the global columns and
// the relative-label term on the local ones; masked pairs get kEtcMaskedScore.
template <typename T>
LONGQA_AVX512 void AddBiases(const Shared<T>& s, const Scratch& w, int64_t row,
                             int64_t row_in_block, float* scores, const float* qa) {
  AddMembership(scores, s.n_g, 0, s.own_lo[row], s.own_hi[row], qa[s.not_part_of], qa[s.part_of],
                false);
  etc_fused::AddEntityColumn(s.long_entity, row, scores, qa[s.not_part_of], qa[s.part_of]);
  const int64_t slots = 3 * s.b;
  AddLabels(scores + s.g_cols, slots, s.labels.data() + row_in_block * slots, w.slot_open.data(),
            qa);
}

// Query rows [i0, i0 + R) of the block that starts at long row `first` (q: the block's rows, dh
// apart): scores and label scores (in L1), both terms, softmax, weighted sum into the context.
// vg, vl: fp32 heads' value rows (dh apart); bf16 heads read w.vpg, w.vpl.
template <int NV, int R, typename T>
LONGQA_AVX512_BF16 void RowBlock(const Shared<T>& s, Scratch& w, const T* q, const float* vg,
                                 const float* vl, int64_t head, int64_t first, int64_t i0) {
  constexpr int64_t dh = 16 * NV;
  const __m512 one = _mm512_set1_ps(1.0f);
  float* scores = w.scores.data();
  float* qa = w.qa.data();
  if constexpr (std::is_same_v<T, float>) {
    attention_tiles::ScoreRows<R>(q + i0 * dh, dh, w.kt.data(), s.tp, dh, one, w.column_bias.data(),
                                  scores);
    attention_tiles::ScoreRows<R>(q + i0 * dh, dh, w.relt.data(), s.lp, dh, one, w.zeros.data(),
                                  qa);
  } else {
    attention_tiles::ScoreRowsBf16<R>(q + i0 * dh, dh, w.kp.data(), s.tp, dh, one,
                                      w.column_bias.data(), scores);
    attention_tiles::ScoreRowsBf16<R>(q + i0 * dh, dh, w.relp.data(), s.lp, dh, one, w.zeros.data(),
                                      qa);
  }
  for (int r = 0; r < R; ++r) {
    AddBiases(s, w, first + i0 + r, i0 + r, scores + r * s.tp, qa + r * s.lp);
  }
  const int64_t d = s.h * dh;
  const int64_t at = (first + i0) * d + head * dh;
  if constexpr (std::is_same_v<T, float>) {
    attention_tiles::ExpRows(scores, R, s.tp, w.inv_sum.data(), scores);
    const attention_tiles::ValueRows values[] = {{vg, dh, s.n_g, 0}, {vl, dh, 3 * s.b, s.g_cols}};
    if (s.out.f != nullptr) {
      attention_tiles::WeightedSum<R, NV>(scores, s.tp, values, w.inv_sum.data(), s.out.f + at, d);
    } else {
      attention_tiles::WeightedSum<R, NV>(scores, s.tp, values, w.inv_sum.data(), s.out.bf16 + at,
                                          d);
    }
  } else {
    attention_tiles::ExpRows(scores, R, s.tp, w.inv_sum.data(), w.weights.data());
    const attention_tiles::ValuePairs values[] = {{w.vpg.data(), s.n_g, 0},
                                                  {w.vpl.data(), 3 * s.b, s.g_cols}};
    if (s.out.f != nullptr) {
      attention_tiles::WeightedSum<R, NV>(w.weights.data(), s.tp, values, w.inv_sum.data(),
                                          s.out.f + at, d);
    } else {
      attention_tiles::WeightedSum<R, NV>(w.weights.data(), s.tp, values, w.inv_sum.data(),
                                          s.out.bf16 + at, d);
    }
  }
}

template <int NV, int R, typename T>
LONGQA_AVX512_BF16 void RowBlockOf(int rows, const Shared<T>& s, Scratch& w, const T* q,
                                   const float* vg, const float* vl, int64_t head, int64_t first,
                                   int64_t i0) {
  if constexpr (R > 1) {
    if (rows < R) return RowBlockOf<NV, R - 1>(rows, s, w, q, vg, vl, head, first, i0);
  }
  RowBlock<NV, R>(s, w, q, vg, vl, head, first, i0);
}

// Block `block` of head `head`.
template <int NV, typename T>
LONGQA_AVX512_BF16 void AttendBlock(const Shared<T>& s, Scratch& w, int64_t head, int64_t block) {
  constexpr int64_t dh = 16 * NV;
  const int64_t b = s.b, slots = 3 * b;
  const int64_t globals = head * s.n_g * dh, labels = head * s.num_labels * dh;
  if (w.head != head) {  // the head's global keys and values and its label keys
    if constexpr (std::is_same_v<T, float>) {
      attention_tiles::PackKeysTransposed(s.kg + globals, dh, s.n_g, dh, w.kt.data(), s.tp);
      attention_tiles::PackKeysTransposed(s.rel + labels, dh, s.num_labels, dh, w.relt.data(),
                                          s.lp);
    } else {
      attention_tiles::PackKeyPairs(s.kg + globals, dh, s.n_g, dh, w.kp.data(), s.tp);
      attention_tiles::PackKeyPairs(s.rel_bf16 + labels, dh, s.num_labels, dh, w.relp.data(), s.lp);
      attention_tiles::PackValuePairs(s.vg + globals, dh, s.n_g, dh, w.vpg.data());
    }
    w.head = head;
  }
  // The block's three neighbouring blocks: 3b consecutive rows of the padded buffers.
  const int64_t window = (b + head * s.n_pad + (block - 1) * b) * dh;
  if constexpr (std::is_same_v<T, float>) {
    attention_tiles::PackKeysTransposed(s.kl + window, dh, slots, dh, w.kt.data(), s.tp, s.g_cols);
  } else {
    attention_tiles::PackKeyPairs(s.kl + window, dh, slots, dh, w.kp.data(), s.tp, s.g_cols);
    attention_tiles::PackValuePairs(s.vl + window, dh, slots, dh, w.vpl.data());
  }
  for (int64_t j = 0; j < slots; ++j) {
    w.slot_open[j] = s.block_index[block * slots + j] >= 0 ? 1 : 0;
  }
  const int64_t first = block * b, rows = std::min(b, s.n_l - first);
  const T* q = s.q + (head * s.n_pad + first) * dh;
  const float *vg = nullptr, *vl = nullptr;
  if constexpr (std::is_same_v<T, float>) {
    vg = s.vg + globals;
    vl = s.vl + window;
  }
  constexpr int R = RowsFor(NV);
  for (int64_t i0 = 0; i0 < rows; i0 += R) {
    RowBlockOf<NV, R>(static_cast<int>(std::min<int64_t>(R, rows - i0)), s, w, q, vg, vl, head,
                      first, i0);
  }
}

template <typename T>
void AttendBlockOfWidth(const Shared<T>& s, Scratch& w, int64_t head, int64_t block) {
  attention_tiles::ForVectorsPerHead(
      s.dh / 16, [&](auto nv) { AttendBlock<decltype(nv)::value>(s, w, head, block); });
}

template <typename T>
void Attend(const EtcLongAttentionInputs& in, int64_t b0, int64_t blocks, at::Tensor& out) {
  Shared<T> s;
  etc_fused::FillLong(s, in, out, 16);
  s.g_cols = Round16(s.n_g);
  s.tp = s.g_cols + Round16(3 * s.b);
  const int64_t dh = s.dh, slots = 3 * s.b;
  at::parallel_for(0, s.h * blocks, 1, [&](int64_t begin, int64_t end) {
    Scratch w;
    w.column_bias.assign(s.tp, -INFINITY);
    std::fill_n(w.column_bias.begin(), s.n_g, 0.0f);
    std::fill_n(w.column_bias.begin() + s.g_cols, slots, 0.0f);
    w.zeros.assign(s.lp, 0.0f);
    w.scores.resize(kMaxRows * s.tp);
    w.qa.resize(kMaxRows * s.lp);
    w.inv_sum.resize(kMaxRows);
    w.slot_open.resize(slots);
    if constexpr (std::is_same_v<T, float>) {
      w.kt.assign(dh * s.tp, 0.0f);
      w.relt.assign(dh * s.lp, 0.0f);
    } else {
      w.kp.assign(dh / 2 * s.tp, 0);
      w.relp.assign(dh / 2 * s.lp, 0);
      w.vpg.resize((s.n_g + 1) / 2 * dh);
      w.vpl.resize((slots + 1) / 2 * dh);
      w.weights.resize(kMaxRows * s.tp);
    }
    for (int64_t task = begin; task < end; ++task) {
      const int64_t head = task / blocks, block = b0 + task % blocks;
      if (block * s.b < s.n_l) AttendBlockOfWidth(s, w, head, block);
    }
  });
}

// ---- Global queries: the long keys a chunk at a time, online softmax ----

constexpr int64_t kKeyChunk = 256;  // keys packed at a time (a chunk's kt: 64 KiB at dh 64)
constexpr int64_t kTaskRows = 32;   // global query rows a task

// A thread's buffers: a chunk's keys transposed (fp32 heads; their pairs and the values' pairs
// for bf16 heads) and its column bias (0, then -inf past the chunk's keys), the task's label
// scores, its rows' accumulators, running maxima and sums.
struct GlobalScratch {
  std::vector<float> kt, relt, column_bias, zeros, scores, qa, acc, top, total, alpha;
  std::vector<uint32_t> kp, relp, vp;  // bf16 heads
  std::vector<at::BFloat16> weights;   // bf16 heads: the rows' weights rounded to bf16
};

// One chunk of `count` keys (packed in w.kt or w.kp; v the fp32 heads' value rows, dh apart;
// bf16 heads read w.vp) for the task's query rows [i0, i0 + R) (request rows row0 + i0 + r):
// scores, the chunk's term, the running maximum and sum, the accumulators.
template <int NV, int R, typename T>
LONGQA_AVX512_BF16 void GlobalChunkRows(const Common<T>& s, GlobalScratch& w, const T* q,
                                        int64_t row0, int64_t i0, bool long_keys, int64_t key0,
                                        int64_t count, const float* v) {
  constexpr int64_t dh = 16 * NV;
  const int64_t tp = Round16(count);
  const __m512 one = _mm512_set1_ps(1.0f);
  float* scores = w.scores.data();
  if constexpr (std::is_same_v<T, float>) {
    attention_tiles::ScoreRows<R>(q + i0 * dh, dh, w.kt.data(), tp, dh, one, w.column_bias.data(),
                                  scores);
  } else {
    attention_tiles::ScoreRowsBf16<R>(q + i0 * dh, dh, w.kp.data(), tp, dh, one,
                                      w.column_bias.data(), scores);
  }
  for (int r = 0; r < R; ++r) {
    const int64_t row = row0 + i0 + r;
    const float* qa = w.qa.data() + (i0 + r) * s.lp;
    float* row_scores = scores + r * tp;
    if (long_keys) {
      AddMembership(row_scores, count, key0, s.own_lo[row], s.own_hi[row], qa[s.not_part_of],
                    qa[s.part_of], s.mask_outside);
      etc_fused::AddMentionColumns(s.mention_begin, s.mentions, row, key0, count, row_scores,
                                   qa[s.not_part_of], qa[s.part_of], s.mask_outside);
    } else {
      AddLabels(row_scores, count, s.labels.data() + (row - s.r0) * s.n_g + key0, nullptr, qa);
    }
    const float previous = w.top[i0 + r];
    const float top = std::max(previous, attention_tiles::RowMax(row_scores, tp));
    float sum = 0;
    if constexpr (std::is_same_v<T, float>) {
      sum = attention_tiles::ExpRow(row_scores, tp, top, row_scores);
    } else {  // bf16 heads: the weights rounded as they are made
      sum = attention_tiles::ExpRow(row_scores, tp, top, w.weights.data() + r * tp);
    }
    w.alpha[r] = std::exp(previous - top);  // 0 at the first chunk (previous = -inf)
    w.total[i0 + r] = w.total[i0 + r] * w.alpha[r] + sum;
    w.top[i0 + r] = top;
  }
  if constexpr (std::is_same_v<T, float>) {
    attention_tiles::AccumulateWeightedSum<R, NV>(scores, tp,
                                                  attention_tiles::ValueRows{v, dh, count, 0},
                                                  w.alpha.data(), w.acc.data() + i0 * dh, dh);
  } else {
    attention_tiles::AccumulateWeightedSum<R, NV>(
        w.weights.data(), tp, attention_tiles::ValuePairs{w.vp.data(), count, 0}, w.alpha.data(),
        w.acc.data() + i0 * dh, dh);
  }
}

template <int NV, int R, typename T>
LONGQA_AVX512_BF16 void GlobalChunkRowsOf(int rows, const Common<T>& s, GlobalScratch& w,
                                          const T* q, int64_t row0, int64_t i0, bool long_keys,
                                          int64_t key0, int64_t count, const float* v) {
  if constexpr (R > 1) {
    if (rows < R) {
      return GlobalChunkRowsOf<NV, R - 1>(rows, s, w, q, row0, i0, long_keys, key0, count, v);
    }
  }
  GlobalChunkRows<NV, R>(s, w, q, row0, i0, long_keys, key0, count, v);
}

// The label scores q·a_K of rows [i0, i0 + R) into w.qa.
template <int NV, int R, typename T>
LONGQA_AVX512_BF16 void LabelScoresOf(int rows, GlobalScratch& w, const T* q, int64_t lp,
                                      int64_t i0) {
  if constexpr (R > 1) {
    if (rows < R) return LabelScoresOf<NV, R - 1>(rows, w, q, lp, i0);
  }
  constexpr int64_t dh = 16 * NV;
  const __m512 one = _mm512_set1_ps(1.0f);
  if constexpr (std::is_same_v<T, float>) {
    attention_tiles::ScoreRows<R>(q + i0 * dh, dh, w.relt.data(), lp, dh, one, w.zeros.data(),
                                  w.qa.data() + i0 * lp);
  } else {
    attention_tiles::ScoreRowsBf16<R>(q + i0 * dh, dh, w.relp.data(), lp, dh, one, w.zeros.data(),
                                      w.qa.data() + i0 * lp);
  }
}

// Keys [key0, key0 + count) of k (rows dh apart) through every row of the task.
template <int NV, typename T>
LONGQA_AVX512_BF16 void GlobalChunk(const Common<T>& s, GlobalScratch& w, const T* q, int64_t row0,
                                    int64_t rows, bool long_keys, const T* k, const T* v,
                                    int64_t key0, int64_t count) {
  constexpr int64_t dh = 16 * NV;
  constexpr int R = RowsFor(NV);
  const int64_t tp = Round16(count);
  std::fill_n(w.column_bias.begin(), count, 0.0f);
  std::fill(w.column_bias.begin() + count, w.column_bias.begin() + tp, -INFINITY);
  const float* values = nullptr;
  if constexpr (std::is_same_v<T, float>) {
    attention_tiles::PackKeysTransposed(k + key0 * dh, dh, count, dh, w.kt.data(), tp);
    values = v + key0 * dh;
  } else {
    attention_tiles::PackKeyPairs(k + key0 * dh, dh, count, dh, w.kp.data(), tp);
    attention_tiles::PackValuePairs(v + key0 * dh, dh, count, dh, w.vp.data());
  }
  for (int64_t i0 = 0; i0 < rows; i0 += R) {
    GlobalChunkRowsOf<NV, R>(static_cast<int>(std::min<int64_t>(R, rows - i0)), s, w, q, row0, i0,
                             long_keys, key0, count, values);
  }
}

// Global rows [row0, row0 + rows) of head `head`.
template <int NV, typename T>
LONGQA_AVX512_BF16 void AttendGlobalRows(const Common<T>& s, GlobalScratch& w, int64_t head,
                                         int64_t row0, int64_t rows) {
  constexpr int64_t dh = 16 * NV;
  constexpr int R = RowsFor(NV);
  const T* q = s.q + (head * s.n_g + row0) * dh;
  const int64_t labels = head * s.num_labels * dh;
  if constexpr (std::is_same_v<T, float>) {
    attention_tiles::PackKeysTransposed(s.rel + labels, dh, s.num_labels, dh, w.relt.data(), s.lp);
  } else {
    attention_tiles::PackKeyPairs(s.rel_bf16 + labels, dh, s.num_labels, dh, w.relp.data(), s.lp);
  }
  for (int64_t i0 = 0; i0 < rows; i0 += R) {
    LabelScoresOf<NV, R>(static_cast<int>(std::min<int64_t>(R, rows - i0)), w, q, s.lp, i0);
  }
  std::fill_n(w.acc.begin(), rows * dh, 0.0f);
  std::fill_n(w.total.begin(), rows, 0.0f);
  std::fill_n(w.top.begin(), rows, -INFINITY);
  const int64_t globals = head * s.n_g * dh, longs = (s.b + head * s.n_pad) * dh;
  for (int64_t key0 = 0; key0 < s.n_g; key0 += kKeyChunk) {
    GlobalChunk<NV>(s, w, q, row0, rows, false, s.kg + globals, s.vg + globals, key0,
                    std::min(kKeyChunk, s.n_g - key0));
  }
  for (int64_t key0 = 0; key0 < s.n_l; key0 += kKeyChunk) {
    GlobalChunk<NV>(s, w, q, row0, rows, true, s.kl + longs, s.vl + longs, key0,
                    std::min(kKeyChunk, s.n_l - key0));
  }
  const int64_t d = s.h * dh;
  for (int64_t r = 0; r < rows; ++r) {
    const __m512 inv = _mm512_set1_ps(1.0f / w.total[r]);
    for (int64_t c = 0; c < dh; c += 16) {
      const __m512 x = _mm512_mul_ps(_mm512_loadu_ps(w.acc.data() + r * dh + c), inv);
      const int64_t at = (row0 + r) * d + head * dh + c;
      if (s.out.f != nullptr) {
        simd::Store(s.out.f + at, x, 0xffff);
      } else {
        simd::Store(s.out.bf16 + at, x, 0xffff);
      }
    }
  }
}

template <typename T>
void AttendGlobalRowsOfWidth(const Common<T>& s, GlobalScratch& w, int64_t head, int64_t row0,
                             int64_t rows) {
  attention_tiles::ForVectorsPerHead(
      s.dh / 16, [&](auto nv) { AttendGlobalRows<decltype(nv)::value>(s, w, head, row0, rows); });
}

template <typename T>
void AttendGlobal(const EtcGlobalAttentionInputs& in, int64_t r0, int64_t rows, at::Tensor& out) {
  Common<T> s;
  etc_fused::FillGlobal(s, in, r0, rows, out, 16);
  const int64_t dh = s.dh, groups = (rows + kTaskRows - 1) / kTaskRows;
  at::parallel_for(0, s.h * groups, 1, [&](int64_t begin, int64_t end) {
    GlobalScratch w;
    w.column_bias.resize(kKeyChunk);
    w.zeros.assign(s.lp, 0.0f);
    w.scores.resize(kMaxRows * kKeyChunk);
    w.qa.resize(kTaskRows * s.lp);
    w.acc.resize(kTaskRows * dh);
    w.top.resize(kTaskRows);
    w.total.resize(kTaskRows);
    w.alpha.resize(kMaxRows);
    if constexpr (std::is_same_v<T, float>) {
      w.kt.resize(dh * kKeyChunk);
      w.relt.assign(dh * s.lp, 0.0f);
    } else {
      w.kp.resize(dh / 2 * kKeyChunk);
      w.relp.assign(dh / 2 * s.lp, 0);
      w.vp.resize(kKeyChunk / 2 * dh);
      w.weights.resize(kMaxRows * kKeyChunk);
    }
    for (int64_t task = begin; task < end; ++task) {
      const int64_t head = task / groups, row0 = r0 + (task % groups) * kTaskRows;
      AttendGlobalRowsOfWidth(s, w, head, row0, std::min(kTaskRows, r0 + rows - row0));
    }
  });
}

void Require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("fused ETC attention: ") + what);
}

// The queries' side of both Applies for the AVX-512 form: fp32 or bf16 heads of 16 to 128
// features.
bool Avx512Applies(const at::Tensor& q) {
  if (!FusedCpuOpsAvailable() || !q.defined() || !q.is_cpu() || q.dim() != 3 ||
      (q.scalar_type() != at::kFloat && q.scalar_type() != at::kBFloat16) || q.requires_grad()) {
    return false;
  }
  const int64_t dh = q.size(2);
  return dh > 0 && dh % 16 == 0 && dh / 16 <= kMaxVectorsPerHead;
}

// For the AVX2 form: fp32 heads of 8 to 64 features.
bool Avx2Applies(const at::Tensor& q) {
  return Avx2AttentionAvailable() && q.defined() && q.is_cpu() && q.dim() == 3 &&
         q.scalar_type() == at::kFloat && !q.requires_grad() &&
         Avx2AttentionTakesHeadWidth(q.size(2));
}

bool QueriesApply(const at::Tensor& q, EtcKernelIsa isa) {
  return (isa == EtcKernelIsa::kAuto && Avx512Applies(q)) || Avx2Applies(q);
}

// Whether a call that applies runs the AVX-512 form.
bool UsesAvx512(const at::Tensor& q, EtcKernelIsa isa) {
  return isa == EtcKernelIsa::kAuto && Avx512Applies(q);
}

// What both kernels read besides their queries and tables: keys and values of the queries'
// dtype, contiguous on the CPU, in the documented shapes.
void RequireKeysAndValues(const at::Tensor& queries, const at::Tensor& global_keys,
                          const at::Tensor& global_values, const at::Tensor& long_keys,
                          const at::Tensor& long_values, const at::Tensor& relative_keys,
                          int64_t block, int64_t n_pad, const at::Tensor& out) {
  const at::ScalarType dtype = queries.scalar_type();
  for (const at::Tensor* t : {&queries, &global_keys, &global_values, &long_keys, &long_values}) {
    Require(t->is_cpu() && t->is_contiguous() && t->scalar_type() == dtype,
            "q, k and v must be contiguous CPU tensors of one dtype");
  }
  Require(out.is_cpu() && out.is_contiguous() &&
              (out.scalar_type() == at::kFloat || out.scalar_type() == at::kBFloat16),
          "out must be a contiguous fp32 or bf16 CPU tensor");
  const int64_t h = queries.size(0), dh = queries.size(2);
  Require(global_keys.dim() == 3 && global_keys.size(0) == h && global_keys.size(2) == dh &&
              global_values.sizes() == global_keys.sizes(),
          "global keys and values must be [h, n_g, dh]");
  Require(block > 0 && long_keys.dim() == 2 && long_keys.size(0) == h * n_pad + 2 * block &&
              long_keys.size(1) == dh && long_values.sizes() == long_keys.sizes(),
          "long keys and values must be [block + h * n_pad + block, dh]");
  Require(relative_keys.dim() == 3 && relative_keys.size(0) == h && relative_keys.size(2) == dh,
          "relative keys must be [h, L, dh]");
}

void RequireTables(std::initializer_list<const at::Tensor*> tables) {
  for (const at::Tensor* t : tables) {
    Require(t->is_cpu() && t->is_contiguous() && t->scalar_type() == at::kLong,
            "the tables must be contiguous int64 CPU tensors");
  }
}

void RequireLabels(int64_t labels, int64_t part_of, int64_t not_part_of, const at::Tensor& table) {
  Require(part_of >= 0 && part_of < labels && not_part_of >= 0 && not_part_of < labels,
          "membership labels out of range");
  Require(table.numel() == 0 || table.max().item<int64_t>() < labels, "a label out of range");
}

}  // namespace

bool FusedEtcAttentionTakesBf16Heads(int64_t dh) {
  return FusedCpuOpsAvailable() && dh > 0 && dh % 16 == 0 && dh / 16 <= kMaxVectorsPerHead;
}

bool FusedEtcLongAttentionApplies(const EtcLongAttentionInputs& in, EtcKernelIsa isa) {
  return QueriesApply(in.queries, isa);
}

bool FusedEtcGlobalAttentionApplies(const EtcGlobalAttentionInputs& in, EtcKernelIsa isa) {
  return QueriesApply(in.queries, isa);
}

void FusedEtcLongAttention(const EtcLongAttentionInputs& in, int64_t b0, int64_t blocks,
                           at::Tensor out, EtcKernelIsa isa) {
  Require(FusedEtcLongAttentionApplies(in, isa), "not an input of the fused path");
  const int64_t h = in.queries.size(0), n_pad = in.queries.size(1), dh = in.queries.size(2);
  const int64_t b = in.block;
  RequireKeysAndValues(in.queries, in.global_keys, in.global_values, in.long_keys, in.long_values,
                       in.relative_keys, b, n_pad, out);
  RequireTables({&in.own_lo, &in.own_hi, &in.local_labels, &in.block_index});
  if (in.long_entity.defined()) {
    RequireTables({&in.long_entity});
    Require(in.long_entity.numel() >= n_pad &&
                in.long_entity.max().item<int64_t>() < in.global_keys.size(1),
            "entity columns need n_pad rows, each -1 or a global key");
  }
  Require(n_pad % b == 0 && in.n_l <= n_pad, "n_pad must be whole blocks holding n_l");
  Require(b0 >= 0 && blocks >= 0 && b0 + blocks <= n_pad / b, "blocks out of range");
  RequireLabels(in.relative_keys.size(1), in.part_of, in.not_part_of, in.local_labels);
  Require(in.own_lo.numel() >= n_pad && in.own_hi.numel() >= n_pad, "own ranges need n_pad rows");
  Require(in.local_labels.numel() == b * 3 * b, "local labels must be [block, 3 * block]");
  Require(in.block_index.numel() >= (n_pad / b) * 3 * b, "block index must cover every block");
  Require(out.dim() == 2 && out.size(0) == in.n_l && out.size(1) == h * dh,
          "out must be [n_l, h * dh]");
  if (!UsesAvx512(in.queries, isa)) {
    Common<float> s;
    etc_fused::FillLong(s, in, out, 8);
    Avx2EtcLongAttention(s, b0, blocks);
  } else if (in.queries.scalar_type() == at::kFloat) {
    Attend<float>(in, b0, blocks, out);
  } else {
    Attend<at::BFloat16>(in, b0, blocks, out);
  }
}

void FusedEtcGlobalAttention(const EtcGlobalAttentionInputs& in, int64_t r0, int64_t rows,
                             at::Tensor out, EtcKernelIsa isa) {
  Require(FusedEtcGlobalAttentionApplies(in, isa), "not an input of the fused path");
  const int64_t h = in.queries.size(0), n_g = in.queries.size(1), dh = in.queries.size(2);
  const int64_t b = in.block;
  Require(b > 0 && in.long_keys.dim() == 2 && (in.long_keys.size(0) - 2 * b) % h == 0,
          "long keys must be [block + h * n_pad + block, dh]");
  const int64_t n_pad = (in.long_keys.size(0) - 2 * b) / h;
  RequireKeysAndValues(in.queries, in.global_keys, in.global_values, in.long_keys, in.long_values,
                       in.relative_keys, b, n_pad, out);
  RequireTables({&in.own_lo, &in.own_hi, &in.g2g_labels});
  if (in.mention_begin.defined()) {
    RequireTables({&in.mention_begin, &in.mentions});
    Require(in.mention_begin.numel() == n_g + 1 &&
                in.mention_begin[n_g].item<int64_t>() == in.mentions.numel() &&
                (in.mentions.numel() == 0 || (in.mentions.min().item<int64_t>() >= 0 &&
                                              in.mentions.max().item<int64_t>() < in.n_l)),
            "mentions need n_g + 1 offsets and long keys below n_l");
  }
  Require(in.global_keys.size(1) == n_g, "one global key per global query");
  Require(in.n_l >= 0 && in.n_l <= n_pad, "n_l must fit each head's rows");
  Require(r0 >= 0 && rows >= 0 && r0 + rows <= n_g, "rows out of range");
  Require(in.own_lo.numel() == n_g && in.own_hi.numel() == n_g, "own ranges need n_g rows");
  Require(in.g2g_labels.numel() == n_g * n_g, "g2g labels must be [n_g, n_g]");
  RequireLabels(in.relative_keys.size(1), in.part_of, in.not_part_of,
                etc_fused::G2gRows(in, r0, rows));
  Require(out.dim() == 2 && out.size(0) == n_g && out.size(1) == h * dh,
          "out must be [n_g, h * dh]");
  if (!UsesAvx512(in.queries, isa)) {
    Common<float> s;
    etc_fused::FillGlobal(s, in, r0, rows, out, 8);
    Avx2EtcGlobalAttention(s, rows);
  } else if (in.queries.scalar_type() == at::kFloat) {
    AttendGlobal<float>(in, r0, rows, out);
  } else {
    AttendGlobal<at::BFloat16>(in, r0, rows, out);
  }
}

}  // namespace longqa
