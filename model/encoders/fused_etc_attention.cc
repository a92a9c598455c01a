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
#include "model/encoders/fused_cpu_ops.h"

namespace longqa {
namespace {

using attention_tiles::kMaxRows;
using attention_tiles::RowsFor;
constexpr int64_t kMaxVectorsPerHead = 8;  // dh up to 128

int64_t Round16(int64_t n) { return (n + 15) / 16 * 16; }

// What every task reads: raw pointers into EtcLongAttentionInputs' tensors, and the label table
// as int32 (gathered 16 slots a load).
template <typename T>
struct Shared {
  const T *q, *kg, *vg, *kl, *vl;
  const float* rel;  // [h, L, dh] in fp32
  const int64_t *own_lo, *own_hi, *block_index;
  std::vector<int32_t> labels;  // [block, 3 * block]
  int64_t h, dh, n_g, n_l, n_pad, b, num_labels, part_of, not_part_of;
  int64_t tp, lp;  // score columns (n_g global, then 3b local, rounded up), label columns
  T* out;
};

// A thread's buffers. kt holds the keys transposed: the head's global keys in columns [0, n_g)
// (packed when the head changes), the block's local keys in [n_g, n_g + 3b); column_bias is 0 on
// those columns and -inf on the padding past them.
struct Scratch {
  std::vector<float> kt, relt, column_bias, zeros, scores, qa, inv_sum;
  std::vector<float> q, vg, vl;    // fp32 copies of bf16 rows
  std::vector<int32_t> slot_open;  // [3b]: 1 where the block's slot holds a long row
  int64_t head = -1;
};

// scores row r (query `row` of the request) += the membership term on the global columns and
// the relative-label term on the local ones; masked pairs get kEtcMaskedScore.
template <typename T>
LONGQA_AVX512 void AddBiases(const Shared<T>& s, const Scratch& w, int64_t row,
                             int64_t row_in_block, float* scores, const float* qa) {
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const int64_t lo = s.own_lo[row], hi = s.own_hi[row];
  const __m512 outside = _mm512_set1_ps(qa[s.not_part_of]), inside = _mm512_set1_ps(qa[s.part_of]);
  for (int64_t j = 0; j < s.n_g; j += 16) {
    const __mmask16 m = simd::Lanes(s.n_g - j);
    const __m512i key = _mm512_add_epi32(lane, _mm512_set1_epi32(static_cast<int>(j)));
    const __mmask16 own =
        lo < 0 ? 0
               : _mm512_cmpge_epi32_mask(key, _mm512_set1_epi32(static_cast<int>(lo))) &
                     _mm512_cmplt_epi32_mask(key, _mm512_set1_epi32(static_cast<int>(hi)));
    const __m512 term = _mm512_mask_blend_ps(own, outside, inside);
    _mm512_mask_storeu_ps(scores + j, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, scores + j), term));
  }
  const int64_t slots = 3 * s.b;
  const int32_t* labels = s.labels.data() + row_in_block * slots;
  float* local = scores + s.n_g;
  const __m512 masked = _mm512_set1_ps(kernels::kEtcMaskedScore);
  for (int64_t j = 0; j < slots; j += 16) {
    const __mmask16 m = simd::Lanes(slots - j);
    const __m512i label = _mm512_maskz_loadu_epi32(m, labels + j);
    const __m512i open = _mm512_maskz_loadu_epi32(m, w.slot_open.data() + j);
    const __mmask16 valid = m & _mm512_cmpge_epi32_mask(label, _mm512_setzero_si512()) &
                            _mm512_cmpneq_epi32_mask(open, _mm512_setzero_si512());
    const __m512 term = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), valid, label, qa, 4);
    const __m512 sum = _mm512_add_ps(_mm512_maskz_loadu_ps(m, local + j), term);
    _mm512_mask_storeu_ps(local + j, m, _mm512_mask_blend_ps(valid, masked, sum));
  }
}

// Query rows [i0, i0 + R) of the block that starts at long row `first`: scores and label scores
// (in L1), both terms, softmax, weighted sum into the context.
template <int NV, int R, typename T>
LONGQA_AVX512 void RowBlock(const Shared<T>& s, Scratch& w, const float* q, int64_t ld,
                            const float* vg, const float* vl, int64_t head, int64_t first,
                            int64_t i0) {
  constexpr int64_t dh = 16 * NV;
  const __m512 one = _mm512_set1_ps(1.0f);
  float* scores = w.scores.data();
  float* qa = w.qa.data();
  attention_tiles::ScoreRows<R>(q + i0 * ld, ld, w.kt.data(), s.tp, dh, one, w.column_bias.data(),
                                scores);
  attention_tiles::ScoreRows<R>(q + i0 * ld, ld, w.relt.data(), s.lp, dh, one, w.zeros.data(), qa);
  for (int r = 0; r < R; ++r) {
    AddBiases(s, w, first + i0 + r, i0 + r, scores + r * s.tp, qa + r * s.lp);
  }
  attention_tiles::ExpRows(scores, R, s.tp, w.inv_sum.data());
  const attention_tiles::ValueRows values[] = {{vg, dh, s.n_g, 0}, {vl, dh, 3 * s.b, s.n_g}};
  const int64_t d = s.h * dh;
  attention_tiles::WeightedSum<R, NV>(scores, s.tp, values, w.inv_sum.data(),
                                      s.out + (first + i0) * d + head * dh, d);
}

template <int NV, int R, typename T>
LONGQA_AVX512 void RowBlockOf(int rows, const Shared<T>& s, Scratch& w, const float* q, int64_t ld,
                              const float* vg, const float* vl, int64_t head, int64_t first,
                              int64_t i0) {
  if constexpr (R > 1) {
    if (rows < R) return RowBlockOf<NV, R - 1>(rows, s, w, q, ld, vg, vl, head, first, i0);
  }
  RowBlock<NV, R>(s, w, q, ld, vg, vl, head, first, i0);
}

// Block `block` of head `head`.
template <int NV, typename T>
LONGQA_AVX512 void AttendBlock(const Shared<T>& s, Scratch& w, int64_t head, int64_t block) {
  constexpr int64_t dh = 16 * NV;
  const int64_t b = s.b, slots = 3 * b;
  if (w.head != head) {  // the head's global keys and values and its label keys
    attention_tiles::PackKeysTransposed(s.kg + head * s.n_g * dh, dh, s.n_g, dh, w.kt.data(), s.tp);
    for (int64_t l = 0; l < s.num_labels; ++l) {
      for (int64_t c = 0; c < dh; ++c) {
        w.relt[c * s.lp + l] = s.rel[(head * s.num_labels + l) * dh + c];
      }
    }
    if constexpr (!std::is_same_v<T, float>) {
      attention_tiles::ToFloatRows(s.vg + head * s.n_g * dh, dh, s.n_g, dh, w.vg.data());
    }
    w.head = head;
  }
  // The block's three neighbouring blocks: 3b consecutive rows of the padded buffers.
  const int64_t window = (b + head * s.n_pad + (block - 1) * b) * dh;
  attention_tiles::PackKeysTransposed(s.kl + window, dh, slots, dh, w.kt.data(), s.tp, s.n_g);
  for (int64_t j = 0; j < slots; ++j) {
    w.slot_open[j] = s.block_index[block * slots + j] >= 0 ? 1 : 0;
  }
  const int64_t first = block * b, rows = std::min(b, s.n_l - first);
  const T* q = s.q + (head * s.n_pad + first) * dh;
  const float *qf = nullptr, *vg = nullptr, *vl = nullptr;
  if constexpr (std::is_same_v<T, float>) {
    qf = q;
    vg = s.vg + head * s.n_g * dh;
    vl = s.vl + window;
  } else {
    attention_tiles::ToFloatRows(q, dh, rows, dh, w.q.data());
    attention_tiles::ToFloatRows(s.vl + window, dh, slots, dh, w.vl.data());
    qf = w.q.data();
    vg = w.vg.data();
    vl = w.vl.data();
  }
  constexpr int R = RowsFor(NV);
  for (int64_t i0 = 0; i0 < rows; i0 += R) {
    RowBlockOf<NV, R>(static_cast<int>(std::min<int64_t>(R, rows - i0)), s, w, qf, dh, vg, vl, head,
                      first, i0);
  }
}

template <typename T>
LONGQA_AVX512 void AttendBlockOfWidth(const Shared<T>& s, Scratch& w, int64_t head, int64_t block) {
  switch (s.dh / 16) {
    case 1:
      return AttendBlock<1>(s, w, head, block);
    case 2:
      return AttendBlock<2>(s, w, head, block);
    case 3:
      return AttendBlock<3>(s, w, head, block);
    case 4:
      return AttendBlock<4>(s, w, head, block);
    case 5:
      return AttendBlock<5>(s, w, head, block);
    case 6:
      return AttendBlock<6>(s, w, head, block);
    case 7:
      return AttendBlock<7>(s, w, head, block);
    case 8:
      return AttendBlock<8>(s, w, head, block);
    default:
      throw std::logic_error("FusedEtcLongAttention: head width not supported");
  }
}

template <typename T>
void Attend(const EtcLongAttentionInputs& in, int64_t b0, int64_t blocks, at::Tensor& out) {
  Shared<T> s;
  s.h = in.queries.size(0);
  s.n_pad = in.queries.size(1);
  s.dh = in.queries.size(2);
  s.n_g = in.global_keys.size(1);
  s.n_l = in.n_l;
  s.b = in.block;
  s.num_labels = in.relative_keys.size(1);
  s.part_of = in.part_of;
  s.not_part_of = in.not_part_of;
  s.tp = Round16(s.n_g + Round16(3 * s.b));
  s.lp = Round16(s.num_labels);
  s.q = in.queries.data_ptr<T>();
  s.kg = in.global_keys.data_ptr<T>();
  s.vg = in.global_values.data_ptr<T>();
  s.kl = in.long_keys.data_ptr<T>();
  s.vl = in.long_values.data_ptr<T>();
  const at::Tensor rel = in.relative_keys.to(at::kFloat).contiguous();
  s.rel = rel.data_ptr<float>();
  s.own_lo = in.own_lo.data_ptr<int64_t>();
  s.own_hi = in.own_hi.data_ptr<int64_t>();
  s.block_index = in.block_index.data_ptr<int64_t>();
  const int64_t* labels = in.local_labels.data_ptr<int64_t>();
  s.labels.assign(labels, labels + in.local_labels.numel());
  s.out = out.data_ptr<T>();
  const int64_t dh = s.dh, slots = 3 * s.b;
  at::parallel_for(0, s.h * blocks, 1, [&](int64_t begin, int64_t end) {
    Scratch w;
    w.kt.assign(dh * s.tp, 0.0f);
    w.column_bias.assign(s.tp, -INFINITY);
    std::fill_n(w.column_bias.begin(), s.n_g + slots, 0.0f);
    w.relt.assign(dh * s.lp, 0.0f);
    w.zeros.assign(s.lp, 0.0f);
    w.scores.resize(kMaxRows * s.tp);
    w.qa.resize(kMaxRows * s.lp);
    w.inv_sum.resize(kMaxRows);
    w.slot_open.resize(slots);
    if constexpr (!std::is_same_v<T, float>) {
      w.q.resize(s.b * dh);
      w.vg.resize(s.n_g * dh);
      w.vl.resize(slots * dh);
    }
    for (int64_t task = begin; task < end; ++task) {
      const int64_t head = task / blocks, block = b0 + task % blocks;
      if (block * s.b < s.n_l) AttendBlockOfWidth(s, w, head, block);
    }
  });
}

void Require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("FusedEtcLongAttention: ") + what);
}

}  // namespace

bool FusedEtcLongAttentionApplies(const EtcLongAttentionInputs& in) {
  const at::Tensor& q = in.queries;
  if (!FusedCpuOpsAvailable() || !q.defined() || !q.is_cpu() || q.dim() != 3 ||
      (q.scalar_type() != at::kFloat && q.scalar_type() != at::kBFloat16) || q.requires_grad()) {
    return false;
  }
  const int64_t dh = q.size(2);
  // The gathers' int32 offsets: a row of dh elements, 16 rows.
  return dh > 0 && dh % 16 == 0 && dh / 16 <= kMaxVectorsPerHead;
}

void FusedEtcLongAttention(const EtcLongAttentionInputs& in, int64_t b0, int64_t blocks,
                           at::Tensor out) {
  Require(FusedEtcLongAttentionApplies(in), "not an input of the fused path");
  const at::ScalarType dtype = in.queries.scalar_type();
  const at::Tensor& result = out;
  for (const at::Tensor* t :
       {&in.queries, &in.global_keys, &in.global_values, &in.long_keys, &in.long_values, &result}) {
    Require(t->is_cpu() && t->is_contiguous() && t->scalar_type() == dtype,
            "q, k, v and out must be contiguous CPU tensors of one dtype");
  }
  for (const at::Tensor* t : {&in.own_lo, &in.own_hi, &in.local_labels, &in.block_index}) {
    Require(t->is_cpu() && t->is_contiguous() && t->scalar_type() == at::kLong,
            "the tables must be contiguous int64 CPU tensors");
  }
  const int64_t h = in.queries.size(0), n_pad = in.queries.size(1), dh = in.queries.size(2);
  const int64_t b = in.block;
  Require(b > 0 && n_pad % b == 0 && in.n_l <= n_pad, "n_pad must be whole blocks holding n_l");
  Require(b0 >= 0 && blocks >= 0 && b0 + blocks <= n_pad / b, "blocks out of range");
  Require(in.global_keys.dim() == 3 && in.global_keys.size(0) == h &&
              in.global_keys.size(2) == dh && in.global_values.sizes() == in.global_keys.sizes(),
          "global keys and values must be [h, n_g, dh]");
  Require(in.long_keys.dim() == 2 && in.long_keys.size(0) == h * n_pad + 2 * b &&
              in.long_keys.size(1) == dh && in.long_values.sizes() == in.long_keys.sizes(),
          "long keys and values must be [block + h * n_pad + block, dh]");
  Require(in.relative_keys.dim() == 3 && in.relative_keys.size(0) == h &&
              in.relative_keys.size(2) == dh,
          "relative keys must be [h, L, dh]");
  const int64_t labels = in.relative_keys.size(1);
  Require(in.part_of >= 0 && in.part_of < labels && in.not_part_of >= 0 && in.not_part_of < labels,
          "membership labels out of range");
  Require(in.own_lo.numel() >= n_pad && in.own_hi.numel() >= n_pad, "own ranges need n_pad rows");
  Require(in.local_labels.numel() == b * 3 * b, "local labels must be [block, 3 * block]");
  Require(in.local_labels.max().item<int64_t>() < labels, "a local label out of range");
  Require(in.block_index.numel() >= (n_pad / b) * 3 * b, "block index must cover every block");
  Require(out.dim() == 2 && out.size(0) == in.n_l && out.size(1) == h * dh,
          "out must be [n_l, h * dh]");
  if (dtype == at::kFloat) {
    Attend<float>(in, b0, blocks, out);
  } else {
    Attend<at::BFloat16>(in, b0, blocks, out);
  }
}

}  // namespace longqa
