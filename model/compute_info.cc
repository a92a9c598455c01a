#include "model/compute_info.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <cpuid.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <vector>

namespace longqa {

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// OpenBLAS's kernel set, found in whatever BLAS the process loaded (LibTorch's dependency); no
// link-time dependency on OpenBLAS.
std::string OpenBlasCore() {
  using CoreName = char* (*)();
  const auto fn = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  const char* name = fn != nullptr ? fn() : nullptr;
  return name != nullptr ? name : "unknown";
}

// AMX-BF16: CPUID leaf 7, sub-leaf 0, EDX bit 22 (GCC 12's __builtin_cpu_supports lacks it).
bool HasAmxBf16() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (edx & (1u << 22)) != 0;
}

}  // namespace

std::string CpuIsa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512bf16")) return HasAmxBf16() ? "amx_bf16" : "avx512_bf16";
  if (__builtin_cpu_supports("avx512f")) return "avx512";
  if (__builtin_cpu_supports("avx2")) return "avx2";
  if (__builtin_cpu_supports("sse4.2")) return "sse4.2";
  return "baseline";
}

void PreferAvx512Kernels(const std::string& isa) {
  if (isa == "amx_bf16" || isa == "avx512_bf16") setenv("ATEN_CPU_CAPABILITY", "avx512", 0);
}

bool BlasCoreUsesIsa(const std::string& core, const std::string& isa) {
  // OpenBLAS's kernel sets that use each ISA; a core outside the CPU's set leaves part of the GEMM
  // speed unused (measured: Haswell kernels on an AVX-512 CPU, half; Prescott's, a quarter).
  static const std::vector<std::string> kAvx512 = {"skylakex", "cooperlake", "sapphirerapids",
                                                   "zen4"};
  static const std::vector<std::string> kAvx2 = {"haswell", "zen", "skylakex", "cooperlake",
                                                 "sapphirerapids"};
  const std::vector<std::string>* fast = nullptr;
  if (isa.rfind("avx512", 0) == 0 || isa == "amx_bf16") {  // AMX CPUs have AVX-512
    fast = &kAvx512;
  } else if (isa == "avx2") {
    fast = &kAvx2;
  } else {
    return true;  // nothing faster to ask for
  }
  const std::string c = Lower(core);
  return std::any_of(fast->begin(), fast->end(),
                     [&](const std::string& f) { return c.find(f) != std::string::npos; });
}

std::string BetterBlasCore(const std::string& core, const std::string& isa) {
  if (core == "unknown" || BlasCoreUsesIsa(core, isa)) return "";  // "unknown": not OpenBLAS
  if (isa == "amx_bf16" || isa == "avx512_bf16") return "Cooperlake";
  if (isa.rfind("avx512", 0) == 0) return "SkylakeX";
  return "Haswell";  // BlasCoreUsesIsa leaves only avx2 here
}

std::string BlasCoreWarning(const std::string& coretype, const std::string& core,
                            const std::string& isa) {
  const std::string better = BetterBlasCore(core, isa);
  if (better.empty()) return "";
  if (coretype.empty()) {  // OpenBLAS's own choice, and running again with a better one failed
    return "OpenBLAS chose its " + core + " kernels on a CPU with " + isa +
           ": GEMM runs at a quarter to half speed; set OPENBLAS_CORETYPE=" + better;
  }
  return "OPENBLAS_CORETYPE=" + coretype + " makes OpenBLAS run its " + core +
         " kernels on a CPU with " + isa +
         ": GEMM runs at about half speed or worse; unset it to let OpenBLAS choose";
}

void RunWithBestBlasKernels(char** argv) {
  // The user's OPENBLAS_CORETYPE is theirs to keep; the marker stops a second restart.
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  if (std::getenv("LONGQA_OPENBLAS_DETECTED") != nullptr) return;
  const std::string core = OpenBlasCore();
  const std::string better = BetterBlasCore(core, CpuIsa());
  if (better.empty()) return;
  setenv("OPENBLAS_CORETYPE", better.c_str(), 1);
  setenv("LONGQA_OPENBLAS_DETECTED", core.c_str(), 1);
  execv("/proc/self/exe", argv);
  // The exec failed: carry on with OpenBLAS's kernels (DescribeCompute's warning says so).
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv("LONGQA_OPENBLAS_DETECTED");
}

std::string Bf16Warning(const std::string& isa) {
  if (isa == "amx_bf16" || isa == "avx512_bf16") return "";
  return "precision bf16 on a CPU with " + isa +
         " (no AVX512_BF16): bf16 GEMMs are emulated and run slower than fp32";
}

ComputeInfo DescribeCompute() {
  ComputeInfo info;
  info.blas_core = OpenBlasCore();
  info.isa = CpuIsa();
  info.threads = at::get_num_threads();
  info.onednn = at::hasMKLDNN();
  const char* kernels = std::getenv("ATEN_CPU_CAPABILITY");
  info.aten_kernels = kernels != nullptr && *kernels != '\0' ? kernels : "default";
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  const char* detected = std::getenv("LONGQA_OPENBLAS_DETECTED");
  if (coretype != nullptr && detected != nullptr) info.blas_detected = detected;
  info.warning = BlasCoreWarning(coretype != nullptr ? coretype : "", info.blas_core, info.isa);
  return info;
}

std::string ComputeInfoLine(const ComputeInfo& info) {
  const std::string chosen = info.blas_detected.empty() ? ""
                                                        : " (OpenBLAS chose " + info.blas_detected +
                                                              "; longqa set OPENBLAS_CORETYPE)";
  return "BLAS core " + info.blas_core + chosen + ", CPU " + info.isa + ", " +
         std::to_string(info.threads) + " threads, oneDNN " + (info.onednn ? "yes" : "no") +
         ", ATen kernels " + info.aten_kernels;
}

}  // namespace longqa
