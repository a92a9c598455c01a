// What the CPU math runs on, printed at start by longqa-server and the benches (a slow BLAS
// kernel is otherwise invisible): OpenBLAS's core (the kernel set it chose), the vector ISA the
// CPU offers, LibTorch's intra-op threads and whether oneDNN is built in, and a warning when
// OpenBLAS runs kernels older than the CPU (measured: Haswell kernels on an AVX-512 CPU halve
// GEMM; docs/environment.md). The CPU's ISA comes from the compiler's CPU probe. Where OpenBLAS
// picked such kernels itself, the programs run again with better ones (RunWithBestBlasKernels).
#pragma once

#include <string>

namespace longqa {

struct ComputeInfo {
  std::string blas_core;     // OpenBLAS's openblas_get_corename(), or "unknown" (another BLAS)
  std::string isa;           // the best of amx_bf16, avx512_bf16, avx512, avx2, sse4.2 this CPU has
  int threads = 0;           // LibTorch's intra-op threads
  bool onednn = false;       // LibTorch built with oneDNN (mkldnn)
  std::string aten_kernels;  // ATEN_CPU_CAPABILITY ("avx512", ...), or "default"
  std::string warning;       // empty, or why GEMM runs below the CPU's speed
  std::string blas_detected;  // OpenBLAS's own choice where RunWithBestBlasKernels replaced it
};

ComputeInfo DescribeCompute();

// Whether OpenBLAS core `core` runs the vector instructions of `isa` (a CPU's best ISA).
bool BlasCoreUsesIsa(const std::string& core, const std::string& isa);

// The OpenBLAS core to ask for on a CPU whose best ISA is `isa` when `core` does not use it
// (Cooperlake with bf16 instructions, SkylakeX with AVX-512, Haswell with AVX2); empty when `core`
// already does, or is "unknown" (another BLAS).
std::string BetterBlasCore(const std::string& core, const std::string& isa);

// OpenBLAS (0.3.21, Debian 12) picks its kernels once, as the library loads, from the CPU's model
// number; on a CPU it does not know it falls back to old ones (measured: Prescott's SSE3 kernels on
// a Xeon with AVX512_BF16 and AVX512_FP16 that names itself "Intel(R) Xeon(R) Processor": fp32
// GEMM 28 GFLOP/s against Cooperlake's 103, one thread; training 3x slower). OPENBLAS_CORETYPE is
// read only then, so where it is unset and the kernels are below this CPU's ISA this runs the
// program again (execv of /proc/self/exe, same argv) with OPENBLAS_CORETYPE=BetterBlasCore(...)
// and LONGQA_OPENBLAS_DETECTED=<OpenBLAS's choice>, which ComputeInfoLine names and which stops a
// second restart. Returns where nothing is to be done or the exec failed. A user's
// OPENBLAS_CORETYPE is kept (BlasCoreWarning says what it costs). Call first thing in main().
void RunWithBestBlasKernels(char** argv);

// The warning for OpenBLAS core `core` chosen while OPENBLAS_CORETYPE is `coretype` (empty when
// unset) on a CPU whose best ISA is `isa`; empty when nothing is wrong.
std::string BlasCoreWarning(const std::string& coretype, const std::string& core,
                            const std::string& isa);

// The warning for --precision=bf16 on a CPU whose best ISA is `isa`; empty when it has bf16
// instructions (AVX512_BF16 or AMX).
std::string Bf16Warning(const std::string& isa);

// LibTorch 1.13 runs its own vectorised kernels (softmax, GELU, exp, LayerNorm, casts) with AVX2
// on every CPU unless ATEN_CPU_CAPABILITY asks for AVX-512 (upstream made AVX-512 opt-in: it was
// slower on CPUs that down-clock for it). On a CPU whose best ISA `isa` has bf16 instructions
// (amx_bf16, avx512_bf16: Cooper Lake, Sapphire Rapids, Zen 4, which down-clock little) this sets
// ATEN_CPU_CAPABILITY=avx512 unless the user set it. Measured on an AMX Xeon: softmax 2.0 -> 1.5
// ms, exp 1.6 -> 0.8 ms, a bf16 encoder +3-5%. LibTorch reads the variable once, at its first
// kernel call: call this first thing in main().
void PreferAvx512Kernels(const std::string& isa);

// The best ISA of this CPU (DescribeCompute's `isa`).
std::string CpuIsa();

// One line: "BLAS core Haswell, CPU avx512, 2 threads, oneDNN yes, ATen kernels default".
std::string ComputeInfoLine(const ComputeInfo& info);

}  // namespace longqa
