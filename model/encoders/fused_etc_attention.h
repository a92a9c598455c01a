// ETC's attention (ETC §3) in fused passes on AVX-512 CPUs (issue 22: ETC at 66% of the GEMM
// rate, its attention at 45-60 GFLOP/s in LibTorch's chunked form, which writes chunks of scores,
// adds the label and membership terms in two passes, a softmax in a third, and runs batched
// products of 85 x 255 x 64 that spend more time in OpenBLAS's packing and thread hand-offs than
// in arithmetic). Long queries (l2g + l2l under one softmax): a task per (head, block) packs the
// block's keys once, keeps a few query rows' scores in L1, adds both terms there and writes its
// slice of the context. Global queries (g2g + g2l): a task per (head, 32 rows) runs the keys in
// chunks of 256 with a running maximum and sum (online softmax). No score chunk exists.
// fp32 heads in fp32 arithmetic; bf16 heads by AVX512_BF16 dot products (two features or two keys
// a multiply-add, summed in fp32; the attention weights rounded to bf16 as LibTorch's bf16 path
// rounds them, their sums kept in fp32): twice the fp32 rate on CPUs without AMX. CPUs with AVX2
// and FMA but no AVX-512 (and heads the AVX-512 form does not take) run the same passes in AVX2
// (fused_etc_attention_avx2.cc): fp32 heads of 8 to 64 features.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace longqa {

// Which form of the kernels a call runs: kAuto the AVX-512 form where it applies, else the AVX2
// form; kAvx2 the AVX2 form (the tests run it on AVX-512 CPUs too).
enum class EtcKernelIsa { kAuto, kAvx2 };

// One request's long-query attention in the layout of EtcEncoder::AttendInference: every tensor
// a contiguous CPU tensor; q, k and v of one dtype (fp32 or bf16).
struct EtcLongAttentionInputs {
  at::Tensor queries;        // [h, n_pad, dh], already times 1/sqrt(dh)
  at::Tensor global_keys;    // [h, n_g, dh]
  at::Tensor global_values;  // [h, n_g, dh]
  // [block + h * n_pad + block, dh]: `block` zero rows, each head's n_pad rows, `block` zero rows
  // (etc_encoder.cc's padded head-major buffer: a block's three neighbouring blocks are 3 * block
  // consecutive rows).
  at::Tensor long_keys, long_values;
  at::Tensor relative_keys;  // [h, L, dh]: a_K of each relative label, per head
  at::Tensor own_lo,
      own_hi;  // int64 [>= n_pad]: a long row's own global keys [lo, hi); lo < 0: none
  int64_t part_of = 0, not_part_of = 0;  // the membership labels
  // int64 [>= n_pad]: a long row's entity token (a global key it is also part of), or -1;
  // undefined: no entity tokens (etc.entity_globals)
  at::Tensor long_entity;
  at::Tensor
      local_labels;  // int64 [block, 3 * block]: l2l label by (row in block, slot); -1 beyond r
  at::Tensor block_index;  // int64 [num_blocks * 3 * block]: the long row of a slot, or -1
  int64_t block = 0;       // r + 1
  int64_t n_l = 0;         // long rows kept (the rest of n_pad is padding)
};

// Whether FusedEtcLongAttention computes these: CPU tensors without autograd, and either a CPU
// with the AVX-512 paths of FusedCpuOpsAvailable(), fp32 or bf16 heads, dh a multiple of 16 up to
// 128 (not with kAvx2), or a CPU with AVX2 and FMA, fp32 heads, dh a multiple of 8 up to 64.
// EtcEncoder takes its LibTorch form otherwise (and on a GPU).
bool FusedEtcLongAttentionApplies(const EtcLongAttentionInputs& in,
                                  EtcKernelIsa isa = EtcKernelIsa::kAuto);

// out rows [b0 * block, min(n_l, (b0 + blocks) * block)) ([n_l, h * dh], fp32 or bf16) =
// softmax over the global keys and the block's three neighbouring blocks of
// q·k + q·a_K[label], where the label is part_of / not_part_of for a global key and the relative
// label for a long key (pairs beyond the radius or at an empty slot masked, -1e30 as the LibTorch
// form), times the values. Requires FusedEtcLongAttentionApplies(in, isa).
void FusedEtcLongAttention(const EtcLongAttentionInputs& in, int64_t b0, int64_t blocks,
                           at::Tensor out, EtcKernelIsa isa = EtcKernelIsa::kAuto);

// One request's global-query attention (g2g and g2l keys under one softmax) in the layout of
// EtcEncoder::AttendInference; tensors as EtcLongAttentionInputs'.
struct EtcGlobalAttentionInputs {
  at::Tensor queries;                 // [h, n_g, dh], already times 1/sqrt(dh)
  at::Tensor global_keys;             // [h, n_g, dh]
  at::Tensor global_values;           // [h, n_g, dh]
  at::Tensor long_keys, long_values;  // the padded head-major buffers, as above
  at::Tensor relative_keys;           // [h, L, dh]
  at::Tensor g2g_labels;              // int64 [n_g, n_g]: -1 masks the pair
  at::Tensor own_lo, own_hi;  // int64 [n_g]: a global row's own long keys [lo, hi); lo < 0: none
  int64_t part_of = 0, not_part_of = 0;
  // ETC's hard g2l mask: a row with a range (or mentions) sees no other long key
  bool mask_outside = false;
  // Entity tokens' own long keys besides the range: global row g's are
  // mentions[mention_begin[g], mention_begin[g + 1]), ascending (int64 [n_g + 1] and [links]);
  // undefined: none.
  at::Tensor mention_begin, mentions;
  int64_t block = 0;  // the buffers' padding rows
  int64_t n_l = 0;    // long keys (each head's n_pad rows hold n_l, then padding)
};

// Whether the fused kernels multiply bf16 heads of dh features on this CPU (their AVX-512 form):
// int8 ETC layers then hand them their heads in bf16 (dot products, as the int8 window layers'
// attention: TransformerLayer::bf16_attention_products), the contexts staying fp32.
bool FusedEtcAttentionTakesBf16Heads(int64_t dh);

// Whether FusedEtcGlobalAttention computes these (as FusedEtcLongAttentionApplies).
bool FusedEtcGlobalAttentionApplies(const EtcGlobalAttentionInputs& in,
                                    EtcKernelIsa isa = EtcKernelIsa::kAuto);

// out rows [r0, r0 + rows) ([n_g, h * dh], fp32 or bf16) = softmax over the global keys
// (q·k + q·a_K[g2g label]) and the long keys (q·k + q·a_K[part_of / not_part_of]), times the
// values: the long keys a chunk at a time with a running maximum and sum (online softmax), so no
// [n_g, n_l] block exists. Requires FusedEtcGlobalAttentionApplies(in, isa).
void FusedEtcGlobalAttention(const EtcGlobalAttentionInputs& in, int64_t r0, int64_t rows,
                             at::Tensor out, EtcKernelIsa isa = EtcKernelIsa::kAuto);

}  // namespace longqa
