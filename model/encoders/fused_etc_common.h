// What the fused ETC kernels of every instruction set read (fused_etc_attention.cc for AVX-512,
// fused_etc_attention_avx2.cc for AVX2): raw pointers into the inputs' tensors, and the label rows
// a call reads, as int32. Filled once a call by FusedEtcLongAttention / FusedEtcGlobalAttention
// after their checks. Internal to those files.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <type_traits>
#include <vector>

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
};

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
}

}  // namespace longqa::etc_fused
