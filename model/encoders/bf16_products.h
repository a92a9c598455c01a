// Batched products of bf16 operands whose sums are fp32 on every CPU. LibTorch 1.13 runs a CPU
// bf16 GEMM through oneDNN (fp32 sums) only on CPUs with AVX-512 (BW, VL, DQ); elsewhere (AVX2
// CPUs) its own kernel adds the products of A·B with B row-major in bf16, rounding every partial
// sum: attention's weighted sum of 40 values came out 0.66% off on average, against 0.14% for
// fp32 sums rounded once. There the products below go through fp32 (exact for bf16 inputs) and
// round once, as oneDNN's do. Products of A·Bᵀ (a transposed view) already sum in fp32.
#pragma once

#include <ATen/core/Tensor.h>

namespace longqa {

// Whether LibTorch's CPU bf16 GEMMs sum in fp32 on this CPU (oneDNN takes them).
bool CpuBf16GemmSumsInFp32();

// at::bmm(a, b), with fp32 sums where a is a CPU bf16 tensor.
at::Tensor Bf16SafeBmm(const at::Tensor& a, const at::Tensor& b);

// at::bmm_out(out, a, b), likewise.
at::Tensor& Bf16SafeBmmOut(at::Tensor& out, const at::Tensor& a, const at::Tensor& b);

// out += a · b (at::baddbmm_), likewise; out rounded once.
at::Tensor& Bf16SafeBaddbmm_(at::Tensor& out, const at::Tensor& a, const at::Tensor& b);

}  // namespace longqa
