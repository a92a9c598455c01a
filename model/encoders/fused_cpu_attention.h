// Multi-head self-attention of a batch of windows on the CPU in one pass per (window, head)
// (issue 22: the gap to ONNX Runtime). LibTorch's path copies Q, K and V into head-major layout,
// runs the 276 x 276 x 64 score and weighted-sum products as small batched GEMMs (fp32: 160-180
// GFLOP/s against 300 for the Linear layers), writes the scores between three passes and copies
// the context back to token-major layout. Here each task reads its head's Q, K and V in place from
// the stacked projection, keeps a block of query rows' scores in L1, applies the softmax there,
// and writes its slice of the context where the output projection reads it. Three forms: AVX-512
// (fp32 heads in fp32 FMAs; bf16 heads by AVX512_BF16 dot products, the weights rounded to bf16),
// AMX tile multiplies for bf16 heads of 32 or 64 features (measured: 2.3-2.8x LibTorch's path a
// layer), and AVX2 for fp32 heads on CPUs without AVX-512 (fused_cpu_attention_avx2.h; 1.8-2.5x;
// docs/perf/README.md).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace longqa {

// Whether FusedWindowAttention computes this: qkv a contiguous fp32 or bf16 CPU tensor [B, T, 3d]
// without autograd, heads of dh = d / heads, and either a CPU with the AVX-512 paths of
// FusedCpuOpsAvailable() (fused_cpu_ops.h) and dh a multiple of 16 up to 128, or fp32, a CPU with
// AVX2 + FMA and dh a multiple of 8 up to 64. Callers take LibTorch's path otherwise.
bool FusedWindowAttentionApplies(const at::Tensor& qkv, int64_t heads);

// context [B, T, d] = softmax(Q K^T / sqrt(dh) + padding) V for each head, from qkv = [B, T, 3d]
// (query | key | value, each `heads` slices of dh, as BERT's self-attention lays them out) and
// valid [B, T] (false: a padding key, which no query attends to, as LibTorch's path adds -1e30
// to its scores; a window with no valid key averages all its values, as that path does).
// bf16 heads: scores and the rows' sums in fp32, the attention weights rounded to bf16 (the dot
// product's or AMX tile multiply's operand, as LibTorch's bf16 path rounds them).
// bf16_products: fp32 heads multiplied as bf16 heads are (q, k and v rounded to bf16 as they are
// packed, the weights too; scores, sums and the fp32 context in fp32): the int8 layers' attention
// on CPUs with AVX512_BF16 (twice the fp32 multiply rate; transformer_layer.h). Requires the
// AVX-512 form (FusedCpuOpsAvailable() and dh a multiple of 16).
// Requires FusedWindowAttentionApplies(qkv, heads).
at::Tensor FusedWindowAttention(const at::Tensor& qkv, const at::Tensor& valid, int64_t heads,
                                bool bf16_products = false);

// Whether FusedWindowAttention takes qkv with bf16_products.
bool FusedWindowAttentionTakesBf16Products(const at::Tensor& qkv, int64_t heads);

}  // namespace longqa
