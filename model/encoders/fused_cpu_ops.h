// The elementwise steps of a transformer layer's CPU inference path, fused and vectorised with
// AVX-512: attention's row softmax, GELU in place, and residual add + LayerNorm in one
// pass (issue 22: ONNX Runtime fuses these; LibTorch 1.13 runs each as its own pass, and its bf16
// softmax converts through a temporary: measured 1.16 against 0.72 ms for 28 x 276 x 276 bf16
// scores on 2 threads, bench/results/fused_cpu_ops/). Each falls back to the LibTorch op where the
// fast path does not apply (another device or dtype, non-contiguous input, a CPU without AVX-512 +
// bf16 instructions), so callers need no conditions of their own.
#pragma once

#include <ATen/ATen.h>

namespace longqa {

// Whether this CPU runs the AVX-512 paths: AVX-512 F/BW/DQ/VL and AVX512_BF16, the CPUs on which
// LibTorch's own kernels run AVX-512 too (model/compute_info.h: older AVX-512 CPUs down-clock).
bool FusedCpuOpsAvailable();

// softmax(scores, -1), computed in fp32 whatever the dtype; anything but a contiguous fp32 or
// bf16 CPU tensor gets at::softmax. Into a new tensor, not in place: in place, the MiniLM model's
// peak memory at 25k tokens read 295 MiB against 216 with 2 threads (longqa-memory-bench, session
// 22), most likely tcmalloc's retained spans rather than live memory (the same reading came with
// the fused attention, and vanished under TCMALLOC_AGGRESSIVE_DECOMMIT: session 23,
// bench/results/fused_cpu_attention/); this form ran at 0.92-0.97x of its speed in two noisy
// alternating runs. The window layers' attention no longer calls it (fused_cpu_attention.h).
at::Tensor SoftmaxLastDim(const at::Tensor& scores);
// The same, written over `scores` and returned: for a caller whose scores are its largest
// temporary (ETC's long-query chunk: 4 MiB of scores and 4 more of weights, a fixed part of every
// request's peak, issue 22). Off the fast path, LibTorch's softmax writes over contiguous CPU
// scores (AVX2 CPUs get the same saving); elsewhere (GPU, strided) its result is copied back.
at::Tensor SoftmaxLastDimInPlace(at::Tensor scores);

// gelu(x) (the erf form, as BERT's), in place where the fast path applies.
at::Tensor GeluInPlace(at::Tensor x);
// The same over n contiguous floats, in place, in the fast path's AVX-512 form: for callers that
// hold rows in cache (Int8Linear's output rows); only where FusedCpuOpsAvailable().
void GeluFloats(float* x, int64_t n);

// layer_norm(y + residual) over the last dimension, in the residual stream's dtype (fp32 on the
// fast path); y may be fp32 or bf16 (a bf16 GEMM's output), residual of y's shape. Where
// `low_precision` is defined (a bf16 tensor of y's shape), the result is also written there,
// rounded: the next bf16 GEMM's input without a pass of its own.
at::Tensor AddLayerNorm(const at::Tensor& y, const at::Tensor& residual, const at::Tensor& weight,
                        const at::Tensor& bias, double eps,
                        const at::Tensor& low_precision = at::Tensor());

}  // namespace longqa
