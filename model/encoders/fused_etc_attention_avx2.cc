#include "model/encoders/fused_etc_attention_avx2.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/etc_score_bias.h"
#include "model/encoders/avx2_attention_tiles.h"

namespace longqa {
namespace {

using avx2_tiles::kRows;
using avx2_tiles::Round8;
using etc_fused::Common;

// scores[j] += the membership term for keys key0 + j, j < count: "part of" for the keys in the
// row's own range [lo, hi) (none when lo < 0), "not part of" elsewhere; with mask_outside, a row
// that has a range scores the keys outside it kEtcMaskedScore (ETC's hard g2l mask). Plain loops
// here and in AddLabels: the compiler vectorises them for AVX2.
LONGQA_AVX2 void AddMembership(float* scores, int64_t count, int64_t key0, int64_t lo, int64_t hi,
                               float outside, float inside, bool mask_outside) {
  const bool mask = mask_outside && lo >= 0;
  for (int64_t j = 0; j < count; ++j) {
    const int64_t key = key0 + j;
    const bool own = lo >= 0 && key >= lo && key < hi;
    const float sum = scores[j] + (own ? inside : outside);
    scores[j] = mask && !own ? kernels::kEtcMaskedScore : sum;
  }
}

// scores[j] += qa[labels[j]] for j < count; kEtcMaskedScore where the label is -1 or (when open
// is not null) open[j] is 0.
LONGQA_AVX2 void AddLabels(float* scores, int64_t count, const int32_t* labels, const int32_t* open,
                           const float* qa) {
  for (int64_t j = 0; j < count; ++j) {
    const int32_t label = labels[j];
    const bool valid = label >= 0 && (open == nullptr || open[j] != 0);
    scores[j] = valid ? scores[j] + qa[valid ? label : 0] : kernels::kEtcMaskedScore;
  }
}

// out's elements [at, at + n) = row (a bf16 context rounded to nearest even).
void StoreRow(const etc_fused::Output& out, int64_t at, const float* row, int64_t n) {
  if (out.f != nullptr) {
    std::copy_n(row, n, out.f + at);
  } else {
    std::transform(row, row + n, out.bf16 + at, [](float x) { return at::BFloat16(x); });
  }
}

// ---- Long queries: a task per (head, block) ----

// Score columns: n_g global ones, the local ones from g_cols = round8(n_g), tp in all.
struct LongShape {
  int64_t g_cols, tp;
};

// A thread's buffers: the keys transposed (the head's global keys in columns [0, n_g), packed
// when the head changes; the block's local keys in [g_cols, g_cols + 3b)), the head's label keys
// transposed, the column bias (0 on the keys' columns, -inf elsewhere), a block of rows' scores
// and label scores, and which of the block's slots hold a long row.
struct Scratch {
  std::vector<float> kt, relt, column_bias, zeros, scores, qa, inv_sum;
  std::vector<float> context;  // [kRows][dh]: a bf16 context's rows before rounding
  std::vector<int32_t> slot_open;
  int64_t head = -1;
};

// Query rows [i0, i0 + R) of the block that starts at long row `first` (q: the block's rows, dh
// apart; vg, vl: the head's global and the block's local value rows): scores and label scores,
// both terms, softmax, weighted sum into the context.
template <int NV, int R>
LONGQA_AVX2 void RowBlock(const Common<float>& s, const LongShape& shape, Scratch& w,
                          const float* q, const float* vg, const float* vl, int64_t head,
                          int64_t first, int64_t i0) {
  constexpr int64_t dh = 8 * NV;
  const __m256 one = _mm256_set1_ps(1.0f);
  const int64_t tp = shape.tp, slots = 3 * s.b;
  float* scores = w.scores.data();
  float* qa = w.qa.data();
  avx2_tiles::ScoreRows<R>(q + i0 * dh, dh, w.kt.data(), tp, dh, one, w.column_bias.data(), scores);
  avx2_tiles::ScoreRows<R>(q + i0 * dh, dh, w.relt.data(), s.lp, dh, one, w.zeros.data(), qa);
  for (int r = 0; r < R; ++r) {
    const int64_t row = first + i0 + r;
    const float* row_qa = qa + r * s.lp;
    AddMembership(scores + r * tp, s.n_g, 0, s.own_lo[row], s.own_hi[row], row_qa[s.not_part_of],
                  row_qa[s.part_of], false);
    etc_fused::AddEntityColumn(s.long_entity, row, scores + r * tp, row_qa[s.not_part_of],
                               row_qa[s.part_of]);
    AddLabels(scores + r * tp + shape.g_cols, slots, s.labels.data() + (i0 + r) * slots,
              w.slot_open.data(), row_qa);
  }
  avx2_tiles::ExpRows(scores, R, tp, w.inv_sum.data());
  const int64_t d = s.h * dh;
  const avx2_tiles::ValueRows values[] = {{vg, dh, s.n_g, 0}, {vl, dh, slots, shape.g_cols}};
  const int64_t at = (first + i0) * d + head * dh;
  if (s.out.f != nullptr) {
    avx2_tiles::WeightedSum<NV, R>(scores, tp, values, w.inv_sum.data(), nullptr, s.out.f + at, d);
    return;
  }
  avx2_tiles::WeightedSum<NV, R>(scores, tp, values, w.inv_sum.data(), nullptr, w.context.data(),
                                 dh);
  for (int r = 0; r < R; ++r) StoreRow(s.out, at + r * d, w.context.data() + r * dh, dh);
}

template <int NV, int R>
LONGQA_AVX2 void RowBlockOf(int rows, const Common<float>& s, const LongShape& shape, Scratch& w,
                            const float* q, const float* vg, const float* vl, int64_t head,
                            int64_t first, int64_t i0) {
  if constexpr (R > 1) {
    if (rows < R) return RowBlockOf<NV, R - 1>(rows, s, shape, w, q, vg, vl, head, first, i0);
  }
  RowBlock<NV, R>(s, shape, w, q, vg, vl, head, first, i0);
}

// Block `block` of head `head`.
template <int NV>
LONGQA_AVX2 void AttendBlock(const Common<float>& s, const LongShape& shape, Scratch& w,
                             int64_t head, int64_t block) {
  constexpr int64_t dh = 8 * NV;
  const int64_t b = s.b, slots = 3 * b;
  const int64_t globals = head * s.n_g * dh;
  if (w.head != head) {  // the head's global keys and its label keys
    avx2_tiles::PackKeysTransposed(s.kg + globals, dh, s.n_g, dh, w.kt.data(), shape.tp);
    avx2_tiles::PackKeysTransposed(s.rel + head * s.num_labels * dh, dh, s.num_labels, dh,
                                   w.relt.data(), s.lp);
    w.head = head;
  }
  // The block's three neighbouring blocks: 3b consecutive rows of the padded buffers.
  const int64_t window = (b + head * s.n_pad + (block - 1) * b) * dh;
  avx2_tiles::PackKeysTransposed(s.kl + window, dh, slots, dh, w.kt.data(), shape.tp, shape.g_cols);
  for (int64_t j = 0; j < slots; ++j) {
    w.slot_open[j] = s.block_index[block * slots + j] >= 0 ? 1 : 0;
  }
  const int64_t first = block * b, rows = std::min(b, s.n_l - first);
  const float* q = s.q + (head * s.n_pad + first) * dh;
  for (int64_t i0 = 0; i0 < rows; i0 += kRows) {
    RowBlockOf<NV, kRows>(static_cast<int>(std::min<int64_t>(kRows, rows - i0)), s, shape, w, q,
                          s.vg + globals, s.vl + window, head, first, i0);
  }
}

// ---- Global queries: the long keys a chunk at a time, online softmax ----

constexpr int64_t kKeyChunk = 256;  // keys packed at a time (a chunk's kt: 64 KiB at dh 64)
constexpr int64_t kTaskRows = 32;   // global query rows a task

// A thread's buffers: a chunk's keys transposed and its column bias (0, then -inf past the
// chunk's keys), the head's label keys, the task's label scores, its rows' accumulators, running
// maxima and sums.
struct GlobalScratch {
  std::vector<float> kt, relt, column_bias, zeros, scores, qa, acc, top, total, alpha;
};

// One chunk of `count` keys (packed in w.kt; v: their value rows, dh apart) for the task's query
// rows [i0, i0 + R) (request rows row0 + i0 + r): scores, the chunk's term, the running maximum
// and sum, the accumulators.
template <int NV, int R>
LONGQA_AVX2 void GlobalChunkRows(const Common<float>& s, GlobalScratch& w, const float* q,
                                 int64_t row0, int64_t i0, bool long_keys, int64_t key0,
                                 int64_t count, const float* v) {
  constexpr int64_t dh = 8 * NV;
  const int64_t tp = Round8(count);
  float* scores = w.scores.data();
  avx2_tiles::ScoreRows<R>(q + i0 * dh, dh, w.kt.data(), tp, dh, _mm256_set1_ps(1.0f),
                           w.column_bias.data(), scores);
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
    __m256 most = _mm256_set1_ps(-INFINITY);
    for (int64_t j = 0; j < tp; j += 8) most = _mm256_max_ps(most, _mm256_loadu_ps(row_scores + j));
    const float previous = w.top[i0 + r];
    const float top = std::max(previous, avx2_tiles::ReduceMax(most));
    const __m256 shift = _mm256_set1_ps(top);
    __m256 sum = _mm256_setzero_ps();
    for (int64_t j = 0; j < tp; j += 8) {
      const __m256 e =
          avx2_tiles::ExpNonPositive(_mm256_sub_ps(_mm256_loadu_ps(row_scores + j), shift));
      sum = _mm256_add_ps(sum, e);
      _mm256_storeu_ps(row_scores + j, e);
    }
    w.alpha[r] = std::exp(previous - top);  // 0 at the first chunk (previous = -inf)
    w.total[i0 + r] = w.total[i0 + r] * w.alpha[r] + avx2_tiles::ReduceAdd(sum);
    w.top[i0 + r] = top;
  }
  const avx2_tiles::ValueRows values[] = {{v, dh, count, 0}};
  avx2_tiles::WeightedSum<NV, R>(scores, tp, values, nullptr, w.alpha.data(),
                                 w.acc.data() + i0 * dh, dh);
}

template <int NV, int R>
LONGQA_AVX2 void GlobalChunkRowsOf(int rows, const Common<float>& s, GlobalScratch& w,
                                   const float* q, int64_t row0, int64_t i0, bool long_keys,
                                   int64_t key0, int64_t count, const float* v) {
  if constexpr (R > 1) {
    if (rows < R) {
      return GlobalChunkRowsOf<NV, R - 1>(rows, s, w, q, row0, i0, long_keys, key0, count, v);
    }
  }
  GlobalChunkRows<NV, R>(s, w, q, row0, i0, long_keys, key0, count, v);
}

// The label scores q·a_K of rows [i0, i0 + R) into w.qa.
template <int NV, int R>
LONGQA_AVX2 void LabelScoresOf(int rows, GlobalScratch& w, const float* q, int64_t lp, int64_t i0) {
  if constexpr (R > 1) {
    if (rows < R) return LabelScoresOf<NV, R - 1>(rows, w, q, lp, i0);
  }
  constexpr int64_t dh = 8 * NV;
  avx2_tiles::ScoreRows<R>(q + i0 * dh, dh, w.relt.data(), lp, dh, _mm256_set1_ps(1.0f),
                           w.zeros.data(), w.qa.data() + i0 * lp);
}

// Keys [key0, key0 + count) of k (rows dh apart) through every row of the task.
template <int NV>
LONGQA_AVX2 void GlobalChunk(const Common<float>& s, GlobalScratch& w, const float* q, int64_t row0,
                             int64_t rows, bool long_keys, const float* k, const float* v,
                             int64_t key0, int64_t count) {
  constexpr int64_t dh = 8 * NV;
  const int64_t tp = Round8(count);
  std::fill_n(w.column_bias.begin(), count, 0.0f);
  std::fill(w.column_bias.begin() + count, w.column_bias.begin() + tp, -INFINITY);
  avx2_tiles::PackKeysTransposed(k + key0 * dh, dh, count, dh, w.kt.data(), tp);
  for (int64_t i0 = 0; i0 < rows; i0 += kRows) {
    GlobalChunkRowsOf<NV, kRows>(static_cast<int>(std::min<int64_t>(kRows, rows - i0)), s, w, q,
                                 row0, i0, long_keys, key0, count, v + key0 * dh);
  }
}

// Global rows [row0, row0 + rows) of head `head`.
template <int NV>
LONGQA_AVX2 void AttendGlobalRows(const Common<float>& s, GlobalScratch& w, int64_t head,
                                  int64_t row0, int64_t rows) {
  constexpr int64_t dh = 8 * NV;
  const float* q = s.q + (head * s.n_g + row0) * dh;
  avx2_tiles::PackKeysTransposed(s.rel + head * s.num_labels * dh, dh, s.num_labels, dh,
                                 w.relt.data(), s.lp);
  for (int64_t i0 = 0; i0 < rows; i0 += kRows) {
    LabelScoresOf<NV, kRows>(static_cast<int>(std::min<int64_t>(kRows, rows - i0)), w, q, s.lp, i0);
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
    float* acc = w.acc.data() + r * dh;
    const __m256 inv = _mm256_set1_ps(1.0f / w.total[r]);
    for (int64_t c = 0; c < dh; c += 8) {
      _mm256_storeu_ps(acc + c, _mm256_mul_ps(_mm256_loadu_ps(acc + c), inv));
    }
    StoreRow(s.out, (row0 + r) * d + head * dh, acc, dh);
  }
}

}  // namespace

void Avx2EtcLongAttention(const Common<float>& s, int64_t b0, int64_t blocks) {
  const LongShape shape{Round8(s.n_g), Round8(s.n_g) + Round8(3 * s.b)};
  const int64_t dh = s.dh, slots = 3 * s.b;
  at::parallel_for(0, s.h * blocks, 1, [&](int64_t begin, int64_t end) {
    Scratch w;
    w.column_bias.assign(shape.tp, -INFINITY);
    std::fill_n(w.column_bias.begin(), s.n_g, 0.0f);
    std::fill_n(w.column_bias.begin() + shape.g_cols, slots, 0.0f);
    w.zeros.assign(s.lp, 0.0f);
    w.scores.resize(kRows * shape.tp);
    w.qa.resize(kRows * s.lp);
    w.inv_sum.resize(kRows);
    w.context.resize(kRows * dh);
    w.slot_open.resize(slots);
    w.kt.assign(dh * shape.tp, 0.0f);
    w.relt.assign(dh * s.lp, 0.0f);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t head = task / blocks, block = b0 + task % blocks;
      if (block * s.b >= s.n_l) continue;
      avx2_tiles::ForVectorsPerHead(
          dh / 8, [&](auto nv) { AttendBlock<decltype(nv)::value>(s, shape, w, head, block); });
    }
  });
}

void Avx2EtcGlobalAttention(const Common<float>& s, int64_t rows) {
  const int64_t dh = s.dh, groups = (rows + kTaskRows - 1) / kTaskRows;
  at::parallel_for(0, s.h * groups, 1, [&](int64_t begin, int64_t end) {
    GlobalScratch w;
    w.column_bias.resize(kKeyChunk);
    w.zeros.assign(s.lp, 0.0f);
    w.scores.resize(kRows * kKeyChunk);
    w.qa.resize(kTaskRows * s.lp);
    w.acc.resize(kTaskRows * dh);
    w.top.resize(kTaskRows);
    w.total.resize(kTaskRows);
    w.alpha.resize(kRows);
    w.kt.resize(dh * kKeyChunk);
    w.relt.assign(dh * s.lp, 0.0f);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t head = task / groups, row0 = s.r0 + (task % groups) * kTaskRows;
      avx2_tiles::ForVectorsPerHead(dh / 8, [&](auto nv) {
        AttendGlobalRows<decltype(nv)::value>(s, w, head, row0,
                                              std::min(kTaskRows, s.r0 + rows - row0));
      });
    }
  });
}

}  // namespace longqa
