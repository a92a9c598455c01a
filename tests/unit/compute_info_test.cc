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

TEST(ComputeInfoTest, SaysNothingWhenTheKernelsMatchTheCpuOrNothingIsForced) {
  EXPECT_EQ(BlasCoreWarning("", "Haswell", "avx512"), "");           // OpenBLAS chose it
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
