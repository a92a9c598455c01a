// What the fused ETC kernels of every instruction set read (fused_etc_attention.cc for AVX-512,
// fused_etc_attention_avx2.cc for AVX2): raw pointers into the inputs' tensors, and the label rows
// a call reads, as int32. Filled once a call by FusedEtcLongAttention / FusedEtcGlobalAttention
// after their checks. Internal to those files.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/etc_score_bias.h"
#include "model/encoders/fused_etc_attention.h"

namespace longqa::etc_fused {

// The context's rows: fp32 or bf16 (one pointer set), whatever the heads' dtype.
struct Output {
  float* f = nullptr;
  at::BFloat16* bf16 = nullptr;
};

// T: the heads' dtype (float or at::BFloat16).
template <typename T>
struct Common {
  const T *q, *kg, *vg, *kl, *vl;
  at::Tensor rel_tensor;                   // the relative keys in the heads' dtype, kept alive
  const float* rel = nullptr;              // [h, L, dh] in fp32 (fp32 heads)
  const at::BFloat16* rel_bf16 = nullptr;  // or in bf16 (bf16 heads)
  const int64_t *own_lo, *own_hi;
  // Long queries: the l2l table [block, 3 * block]; global queries: rows [r0, r0 + rows) of the
  // g2g table.
  std::vector<int32_t> labels;
  int64_t h, dh, n_g, n_l, n_pad, b, num_labels, part_of, not_part_of;
  int64_t lp;  // label columns: L rounded up to the kernel's vector width
  Output out;
  const int64_t* block_index = nullptr;  // long queries
  int64_t r0 = 0;                        // global queries: the call's first row
  bool mask_outside = false;             // global queries: ETC's hard g2l mask
  // Entity links (null: none): long queries' entity column per row; global queries' linked long
  // keys per row (mentions[mention_begin[row], mention_begin[row + 1]), ascending).
  const int64_t* long_entity = nullptr;
  const int64_t *mention_begin = nullptr, *mentions = nullptr;
};

// The scalar part of the membership term both kernels add after their vector pass, which gave
// every global column "not part of" but the row's own range: a long row's entity column gets
// "part of" (scores: the row's global columns).
inline void AddEntityColumn(const int64_t* long_entity, int64_t row, float* scores, float outside,
                            float inside) {
  if (long_entity != nullptr && long_entity[row] >= 0) scores[long_entity[row]] += inside - outside;
}

// The same for a global row over long keys [key0, key0 + count): its mentions there get
// "part of" (scores[j]: key key0 + j); with mask_outside (the hard g2l mask), an entity token's
// other keys get kEtcMaskedScore, as a segment token's outside its segment.
inline void AddMentionColumns(const int64_t* mention_begin, const int64_t* mentions, int64_t row,
                              int64_t key0, int64_t count, float* scores, float outside,
                              float inside, bool mask_outside) {
  if (mention_begin == nullptr || mention_begin[row] == mention_begin[row + 1]) return;
  const int64_t* end = mentions + mention_begin[row + 1];
  const int64_t* m = std::lower_bound(mentions + mention_begin[row], end, key0);
  if (!mask_outside) {
    for (; m != end && *m < key0 + count; ++m) scores[*m - key0] += inside - outside;
    return;
  }
  for (int64_t j = 0; j < count; ++j) {
    if (m != end && *m == key0 + j) {
      scores[j] += inside - outside;
      ++m;
    } else {
      scores[j] = kernels::kEtcMaskedScore;
    }
  }
}

inline Output OutputOf(const at::Tensor& out) {
  Output o;
  if (out.scalar_type() == at::kFloat) {
    o.f = out.data_ptr<float>();
  } else {
    o.bf16 = out.data_ptr<at::BFloat16>();
  }
  return o;
}

// The fields both kernels read; `width`: the kernel's vector width in floats (lp's rounding).
template <typename T>
void FillCommon(Common<T>& s, const at::Tensor& queries, const at::Tensor& global_keys,
                const at::Tensor& global_values, const at::Tensor& long_keys,
                const at::Tensor& long_values, const at::Tensor& relative_keys,
                const at::Tensor& own_lo, const at::Tensor& own_hi, const at::Tensor& labels,
                int64_t part_of, int64_t not_part_of, int64_t block, int64_t n_l,
                const at::Tensor& out, int64_t width) {
  s.h = queries.size(0);
  s.dh = queries.size(2);
  s.n_g = global_keys.size(1);
  s.n_l = n_l;
  s.b = block;
  s.n_pad = (long_keys.size(0) - 2 * block) / s.h;
  s.num_labels = relative_keys.size(1);
  s.part_of = part_of;
  s.not_part_of = not_part_of;
  s.lp = (s.num_labels + width - 1) / width * width;
  s.q = queries.data_ptr<T>();
  s.kg = global_keys.data_ptr<T>();
  s.vg = global_values.data_ptr<T>();
  s.kl = long_keys.data_ptr<T>();
  s.vl = long_values.data_ptr<T>();
  s.rel_tensor = relative_keys.to(queries.scalar_type()).contiguous();
  if constexpr (std::is_same_v<T, float>) {
    s.rel = s.rel_tensor.template data_ptr<float>();
  } else {
    s.rel_bf16 = s.rel_tensor.template data_ptr<at::BFloat16>();
  }
  s.own_lo = own_lo.data_ptr<int64_t>();
  s.own_hi = own_hi.data_ptr<int64_t>();
  const int64_t* table = labels.data_ptr<int64_t>();
  s.labels.assign(table, table + labels.numel());
  s.out = OutputOf(out);
}

// A long-query call's (the l2l table, the block index).
template <typename T>
void FillLong(Common<T>& s, const EtcLongAttentionInputs& in, const at::Tensor& out,
              int64_t width) {
  FillCommon(s, in.queries, in.global_keys, in.global_values, in.long_keys, in.long_values,
             in.relative_keys, in.own_lo, in.own_hi, in.local_labels, in.part_of, in.not_part_of,
             in.block, in.n_l, out, width);
  s.block_index = in.block_index.data_ptr<int64_t>();
  if (in.long_entity.defined()) s.long_entity = in.long_entity.data_ptr<int64_t>();
}

// Rows [r0, r0 + rows) of the g2g label table: all a global-query call reads (and checks).
inline at::Tensor G2gRows(const EtcGlobalAttentionInputs& in, int64_t r0, int64_t rows) {
  const int64_t n_g = in.queries.size(1);
  return in.g2g_labels.view({n_g, n_g}).narrow(0, r0, rows);
}

// A global-query call's for rows [r0, r0 + rows).
template <typename T>
void FillGlobal(Common<T>& s, const EtcGlobalAttentionInputs& in, int64_t r0, int64_t rows,
                const at::Tensor& out, int64_t width) {
  FillCommon(s, in.queries, in.global_keys, in.global_values, in.long_keys, in.long_values,
             in.relative_keys, in.own_lo, in.own_hi, G2gRows(in, r0, rows), in.part_of,
             in.not_part_of, in.block, in.n_l, out, width);
  s.r0 = r0;
  s.mask_outside = in.mask_outside;
  if (in.mention_begin.defined()) {
    s.mention_begin = in.mention_begin.data_ptr<int64_t>();
    s.mentions = in.mentions.data_ptr<int64_t>();
  }
}

}  // namespace longqa::etc_fused
