// What the server prints about the CPU math at start: the OpenBLAS core warning's rule, and the
// live description of this process.
#include "model/compute_info.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cstdlib>

namespace longqa {
namespace {

TEST(ComputeInfoTest, WarnsWhenOpenBlasCoretypeForcesOlderKernelsOnAnAvx512Cpu) {
  const std::string w = BlasCoreWarning("Haswell", "Haswell", "avx512_bf16");
  EXPECT_NE(w.find("OPENBLAS_CORETYPE=Haswell"), std::string::npos) << w;
  EXPECT_NE(w.find("half speed"), std::string::npos) << w;
  EXPECT_NE(BlasCoreWarning("haswell", "Haswell", "avx512"), "");
  EXPECT_NE(BlasCoreWarning("Haswell", "Haswell", "amx_bf16"), "");  // AMX CPUs have AVX-512
  EXPECT_NE(BlasCoreWarning("Prescott", "Prescott", "avx2"), "");    // SSE3 kernels on AVX2
}

TEST(ComputeInfoTest, WarnsWhenOpenBlasItselfChoseOlderKernels) {
  // OpenBLAS 0.3.21 on a CPU it does not know: Prescott's SSE3 kernels (RunWithBestBlasKernels
  // replaces them; the warning is for when it could not).
  const std::string w = BlasCoreWarning("", "Prescott", "avx512_bf16");
  EXPECT_NE(w.find("OpenBLAS chose its Prescott kernels"), std::string::npos) << w;
  EXPECT_NE(w.find("set OPENBLAS_CORETYPE=Cooperlake"), std::string::npos) << w;
  EXPECT_NE(BlasCoreWarning("", "Haswell", "avx512"), "");
}

TEST(ComputeInfoTest, NamesTheOpenBlasCoreForTheCpusBestIsa) {
  EXPECT_EQ(BetterBlasCore("Prescott", "avx512_bf16"), "Cooperlake");
  EXPECT_EQ(BetterBlasCore("Prescott", "amx_bf16"), "Cooperlake");
  EXPECT_EQ(BetterBlasCore("Haswell", "avx512"), "SkylakeX");
  EXPECT_EQ(BetterBlasCore("Prescott", "avx2"), "Haswell");
  EXPECT_EQ(BetterBlasCore("Cooperlake", "avx512_bf16"), "");  // already the CPU's kernels
  EXPECT_EQ(BetterBlasCore("Zen", "avx2"), "");
  EXPECT_EQ(BetterBlasCore("Prescott", "sse4.2"), "");  // nothing better to ask for
  EXPECT_EQ(BetterBlasCore("unknown", "avx512"), "");   // another BLAS than OpenBLAS
  EXPECT_TRUE(BlasCoreUsesIsa("SapphireRapids", "amx_bf16"));
  EXPECT_FALSE(BlasCoreUsesIsa("Prescott", "avx2"));
}

TEST(ComputeInfoTest, SaysNothingWhenTheKernelsMatchTheCpu) {
  EXPECT_EQ(BlasCoreWarning("", "SkylakeX", "avx512"), "");          // OpenBLAS chose it
  EXPECT_EQ(BlasCoreWarning("", "unknown", "avx512"), "");           // not OpenBLAS
  EXPECT_EQ(BlasCoreWarning("Haswell", "Haswell", "avx2"), "");      // the CPU's best
  EXPECT_EQ(BlasCoreWarning("SkylakeX", "SkylakeX", "avx512"), "");  // AVX-512 kernels
  EXPECT_EQ(BlasCoreWarning("COOPERLAKE", "Cooperlake", "avx512_bf16"), "");
}

TEST(ComputeInfoTest, WarnsAboutBf16OnlyWhereTheCpuLacksBf16Instructions) {
  EXPECT_EQ(Bf16Warning("amx_bf16"), "");
  EXPECT_EQ(Bf16Warning("avx512_bf16"), "");
  const std::string w = Bf16Warning("avx2");
  EXPECT_NE(w.find("emulated"), std::string::npos) << w;
  EXPECT_NE(Bf16Warning("avx512"), "");
}

TEST(ComputeInfoTest, DescribesThisProcess) {
  at::set_num_threads(2);
  const ComputeInfo info = DescribeCompute();
  EXPECT_EQ(info.threads, 2);
  EXPECT_FALSE(info.blas_core.empty());
  EXPECT_NE(info.isa, "");
  const std::string line = ComputeInfoLine(info);
  EXPECT_NE(line.find("BLAS core " + info.blas_core), std::string::npos) << line;
  EXPECT_NE(line.find("2 threads"), std::string::npos) << line;
  std::cerr << line << "\n";
  ComputeInfo replaced = info;  // after RunWithBestBlasKernels ran the program again
  replaced.blas_detected = "Prescott";
  const std::string said = ComputeInfoLine(replaced);
  EXPECT_NE(said.find("(OpenBLAS chose Prescott; longqa set OPENBLAS_CORETYPE)"), std::string::npos)
      << said;
}

TEST(ComputeInfoTest, AsksForAvx512KernelsOnlyOnCpusWithBf16AndNeverOverridesTheUser) {
  unsetenv("ATEN_CPU_CAPABILITY");
  PreferAvx512Kernels("avx512");  // AVX-512 without bf16 (Skylake-X): it down-clocks, left alone
  EXPECT_EQ(std::getenv("ATEN_CPU_CAPABILITY"), nullptr);
  PreferAvx512Kernels("avx2");
  EXPECT_EQ(std::getenv("ATEN_CPU_CAPABILITY"), nullptr);
  EXPECT_NE(ComputeInfoLine(DescribeCompute()).find("ATen kernels default"), std::string::npos);
  PreferAvx512Kernels("amx_bf16");
  EXPECT_STREQ(std::getenv("ATEN_CPU_CAPABILITY"), "avx512");
  EXPECT_NE(ComputeInfoLine(DescribeCompute()).find("ATen kernels avx512"), std::string::npos);
  setenv("ATEN_CPU_CAPABILITY", "default", 1);  // the user's choice stays
  PreferAvx512Kernels("avx512_bf16");
  EXPECT_STREQ(std::getenv("ATEN_CPU_CAPABILITY"), "default");
  unsetenv("ATEN_CPU_CAPABILITY");
}

}  // namespace
}  // namespace longqa
