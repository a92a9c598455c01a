// What the CPU math runs on, printed at start by longqa-server and the benches (a slow BLAS
// kernel is otherwise invisible): OpenBLAS's core (the kernel set it chose), the vector ISA the
// CPU offers, LibTorch's intra-op threads and whether oneDNN is built in, and a warning when
// OPENBLAS_CORETYPE forces kernels older than the CPU (measured: Haswell kernels on an AVX-512
// CPU halve GEMM; docs/environment.md). The CPU's ISA comes from the compiler's CPU probe.
#pragma once

#include <string>

namespace longqa {

struct ComputeInfo {
  std::string blas_core;  // OpenBLAS's openblas_get_corename(), or "unknown" (another BLAS)
  std::string isa;  // the best of amx_bf16, avx512_bf16, avx512, avx2, sse4.2 this CPU has
  int threads = 0;        // LibTorch's intra-op threads
  bool onednn = false;    // LibTorch built with oneDNN (mkldnn)
  std::string warning;    // empty, or why GEMM runs below the CPU's speed
};

ComputeInfo DescribeCompute();

// The warning for OpenBLAS core `core` chosen while OPENBLAS_CORETYPE is `coretype` (empty when
// unset) on a CPU whose best ISA is `isa`; empty when nothing is wrong.
std::string BlasCoreWarning(const std::string& coretype, const std::string& core,
                            const std::string& isa);

// The warning for --precision=bf16 on a CPU whose best ISA is `isa`; empty when it has bf16
// instructions (AVX512_BF16 or AMX).
std::string Bf16Warning(const std::string& isa);

// One line: "BLAS core Haswell, CPU avx512, 2 threads, oneDNN yes".
std::string ComputeInfoLine(const ComputeInfo& info);

}  // namespace longqa
