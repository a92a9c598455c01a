// The fused CPU ops (model/encoders/fused_cpu_ops.h) against LibTorch's own ops computed in fp64
// on random inputs: odd row lengths (tails of 1-15 lanes), attention's -1e30 padding bias and
// -inf, fp32 and bf16. Tolerances: fp32 within 1e-6 relative for softmax (its polynomial e^x is
// good to about 2e-7), 2e-6 absolute for GELU (the erf approximation's 1.5e-7 times |x|/2 up to
// |x| = 12), 1e-5 for LayerNorm; bf16 outputs within one bf16 rounding (2^-8 relative) of the
// fp64 result. On a CPU without the AVX-512 paths the ops are LibTorch's and the same checks hold.
#include "model/encoders/fused_cpu_ops.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

namespace longqa {
namespace {

const std::vector<int64_t> kLengths = {1, 15, 16, 17, 33, 277, 384};

// max |got - want| / (atol + rtol |want|): at most 1 means within tolerance.
double WorstRatio(const at::Tensor& got, const at::Tensor& want, double atol, double rtol) {
  const at::Tensor g = got.to(at::kDouble);
  return ((g - want).abs() / (atol + rtol * want.abs())).max().item<double>();
}

TEST(FusedCpuOpsTest, SoftmaxMatchesFp64) {
  // Which path the checks of this file take, in the test log.
  std::printf("fused CPU ops: %s\n", FusedCpuOpsAvailable() ? "AVX-512 paths" : "LibTorch ops");
  at::manual_seed(3);
  for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    for (const int64_t n : kLengths) {
      at::Tensor scores = (at::randn({3, 7, n}) * 4).to(dtype);
      scores[0][1].narrow(0, 0, (n + 1) / 2).fill_(-1e30);  // padding bias
      if (n > 1) scores[1][2][n - 1] = -INFINITY;
      const at::Tensor want = at::softmax(scores.to(at::kDouble), -1);
      const at::Tensor input = scores.clone();
      const at::Tensor got = SoftmaxLastDim(scores);
      ASSERT_EQ(got.scalar_type(), dtype);
      const double ratio = dtype == at::kFloat ? WorstRatio(got, want, 1e-12, 1e-6)
                                               : WorstRatio(got, want, 1e-12, 1.0 / 256);
      EXPECT_LE(ratio, 1.0) << at::toString(dtype) << " n " << n;
      // Padded keys get exactly 0, as LibTorch's softmax gives them.
      EXPECT_EQ(got[0][1].narrow(0, 0, (n + 1) / 2).abs().max().item<double>(), n == 1 ? 1.0 : 0.0);
      EXPECT_TRUE(at::equal(scores, input)) << "the scores are not written";
    }
  }
}

// In place: the same values as SoftmaxLastDim, bit for bit, into the scores' own storage; on
// either path (fp64 is never on the fast path: there, as for every dtype on a CPU without
// AVX-512, it is LibTorch's kernel writing over its input).
TEST(FusedCpuOpsTest, SoftmaxInPlaceEqualsSoftmaxIntoANewTensor) {
  at::manual_seed(4);
  for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16, at::kDouble}) {
    for (const int64_t n : kLengths) {
      at::Tensor scores = (at::randn({2, 5, n}) * 4).to(dtype);
      scores[1][3].narrow(0, 0, (n + 1) / 2).fill_(-1e30);
      const at::Tensor want = SoftmaxLastDim(scores);
      const void* storage = scores.data_ptr();
      const at::Tensor got = SoftmaxLastDimInPlace(scores);
      EXPECT_EQ(got.data_ptr(), storage) << at::toString(dtype) << " n " << n;
      EXPECT_TRUE(at::equal(scores, want)) << at::toString(dtype) << " n " << n;
    }
  }
}

// A strided tensor (off every fast path) gets at::softmax's result copied back.
TEST(FusedCpuOpsTest, SoftmaxInPlaceOfAStridedTensorIsLibTorchs) {
  at::Tensor base = at::randn({4, 20, 9}, at::kDouble);
  const at::Tensor want = at::softmax(base.transpose(1, 2), -1);
  at::Tensor strided = base.transpose(1, 2);
  SoftmaxLastDimInPlace(strided);
  EXPECT_TRUE(at::equal(strided, want));
}

TEST(FusedCpuOpsTest, SoftmaxOfAStridedTensorIsLibTorchs) {
  const at::Tensor base = at::randn({4, 9, 20});
  const at::Tensor strided = base.transpose(1, 2);
  const at::Tensor before = base.clone();
  const at::Tensor got = SoftmaxLastDim(strided);
  EXPECT_TRUE(at::allclose(got, at::softmax(before.transpose(1, 2), -1)));
  EXPECT_TRUE(at::equal(base, before)) << "a strided input is not written";
}

TEST(FusedCpuOpsTest, GeluMatchesFp64) {
  at::manual_seed(5);
  for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    for (const int64_t n : kLengths) {
      // Values over [-12, 12], plus a row of the extremes.
      at::Tensor x = ((at::rand({5, n}) * 24) - 12).to(dtype);
      x[4].fill_(n % 2 ? -1e4 : 1e4);
      const at::Tensor want = at::gelu(x.to(at::kDouble));
      const at::Tensor got = GeluInPlace(x);
      ASSERT_EQ(got.scalar_type(), dtype);
      const double ratio = dtype == at::kFloat ? WorstRatio(got, want, 2e-6, 1e-6)
                                               : WorstRatio(got, want, 2e-6, 1.0 / 256);
      EXPECT_LE(ratio, 1.0) << at::toString(dtype) << " n " << n;
      EXPECT_EQ(got.data_ptr(), x.data_ptr()) << "in place, on either path";
    }
    // The infinities and NaN as LibTorch's: gelu(inf) = inf, gelu(-inf) = -inf * 0 = NaN.
    const at::Tensor special =
        at::tensor({INFINITY, -INFINITY, NAN, 0.0f, -0.0f}, at::kFloat).to(dtype);
    const at::Tensor want = at::gelu(special.to(at::kDouble));
    const at::Tensor got = GeluInPlace(special.clone()).to(at::kDouble);
    EXPECT_TRUE(at::allclose(got, want, 0, 0, /*equal_nan=*/true)) << at::toString(dtype) << "\n"
                                                                   << got << "\n"
                                                                   << want;
  }
}

TEST(FusedCpuOpsTest, AddLayerNormMatchesFp64AndWritesTheBf16Copy) {
  at::manual_seed(7);
  for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    for (const int64_t d : kLengths) {
      if (d == 1) continue;  // LayerNorm of one value is its bias
      const at::Tensor y = (at::randn({6, d}) * 3).to(dtype);
      const at::Tensor residual = at::randn({6, d}) + 2;  // a mean to take out
      const at::Tensor weight = at::randn({d});
      const at::Tensor bias = at::randn({d});
      const at::Tensor want = at::layer_norm(y.to(at::kDouble) + residual.to(at::kDouble), {d},
                                             weight.to(at::kDouble), bias.to(at::kDouble), 1e-12);
      const at::Tensor low = at::empty({6, d}, at::kBFloat16);
      const at::Tensor got = AddLayerNorm(y, residual, weight, bias, 1e-12, low);
      ASSERT_EQ(got.scalar_type(), at::kFloat);
      EXPECT_LE(WorstRatio(got, want, 1e-5, 1e-5), 1.0) << at::toString(dtype) << " d " << d;
      EXPECT_TRUE(at::equal(low, got.to(at::kBFloat16))) << "the bf16 copy is the result rounded";
      EXPECT_TRUE(at::equal(AddLayerNorm(y, residual, weight, bias, 1e-12), got));
    }
  }
}

}  // namespace
}  // namespace longqa
