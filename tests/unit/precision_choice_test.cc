#include "model/precision_choice.h"

#include <gtest/gtest.h>

namespace longqa {
namespace {

TEST(PrecisionChoiceTest, AnFp32ModelIsServedInFp32Everywhere) {
  for (const bool cuda : {false, true}) {
    const PrecisionChoice c = ChoosePrecision("fp32", cuda, "amx_bf16", true);
    EXPECT_EQ(c.precision, Precision::kFp32);
    EXPECT_NE(c.reason.find("default_precision fp32"), std::string::npos) << c.reason;
  }
}

TEST(PrecisionChoiceTest, Bf16OnlyWhereTheDeviceHasBf16Arithmetic) {
  EXPECT_EQ(ChoosePrecision("bf16", false, "amx_bf16", true).precision, Precision::kBf16);
  EXPECT_EQ(ChoosePrecision("bf16", false, "avx512_bf16", true).precision, Precision::kBf16);
  EXPECT_EQ(ChoosePrecision("bf16", true, "avx2", false).precision, Precision::kBf16);
  // Without AVX512_BF16 oneDNN emulates bf16, slower than fp32: the model's wish is declined.
  for (const char* isa : {"avx512", "avx2", "sse4.2"}) {
    const PrecisionChoice c = ChoosePrecision("bf16", false, isa, true);
    EXPECT_EQ(c.precision, Precision::kFp32) << isa;
    EXPECT_NE(c.reason.find("no bf16 instructions"), std::string::npos) << c.reason;
    EXPECT_NE(c.reason.find(isa), std::string::npos) << c.reason;
  }
}

TEST(PrecisionChoiceTest, Int8OnlyOnACpuWhoseLibTorchHasIt) {
  EXPECT_EQ(ChoosePrecision("int8", false, "avx2", true).precision, Precision::kInt8);
  const PrecisionChoice gpu = ChoosePrecision("int8", true, "amx_bf16", true);
  EXPECT_EQ(gpu.precision, Precision::kFp32);
  EXPECT_NE(gpu.reason.find("CPU only"), std::string::npos) << gpu.reason;
  EXPECT_EQ(ChoosePrecision("int8", false, "avx2", false).precision, Precision::kFp32);
}

// A list is tried in order: the first precision the device runs natively, else fp32.
TEST(PrecisionChoiceTest, AListIsTriedInOrder) {
  EXPECT_EQ(ChoosePrecision("bf16,int8", false, "amx_bf16", true).precision, Precision::kBf16);
  // AVX512_BF16 without AMX too: the list's order stands although int8 is the faster there (the
  // list orders what the shipper measured; docs/perf/README.md, session 34).
  EXPECT_EQ(ChoosePrecision("bf16,int8", false, "avx512_bf16", true).precision, Precision::kBf16);
  EXPECT_EQ(ChoosePrecision("bf16,int8", true, "avx2", true).precision, Precision::kBf16);
  const PrecisionChoice avx2 = ChoosePrecision("bf16,int8", false, "avx2", true);
  EXPECT_EQ(avx2.precision, Precision::kInt8);
  EXPECT_EQ(avx2.reason,
            "the model's default_precision bf16,int8: int8 on this CPU (avx2) (passed over: no "
            "bf16 instructions)");
  const PrecisionChoice neither = ChoosePrecision("bf16,int8", false, "avx2", false);
  EXPECT_EQ(neither.precision, Precision::kFp32);
  EXPECT_NE(neither.reason.find("no bf16 instructions; this LibTorch has no int8"),
            std::string::npos)
      << neither.reason;
  EXPECT_EQ(ChoosePrecision("int8,bf16", false, "avx512_bf16", true).precision, Precision::kInt8);
  // fp32 in the list ends it: what follows is never chosen.
  EXPECT_EQ(ChoosePrecision("bf16,fp32,int8", false, "avx512_bf16", true).precision,
            Precision::kBf16);
  EXPECT_EQ(ChoosePrecision("fp32,int8", false, "avx2", true).precision, Precision::kFp32);
  EXPECT_EQ(ChoosePrecision("bf16,fp32,int8", false, "avx2", true).precision, Precision::kFp32);
}

}  // namespace
}  // namespace longqa
