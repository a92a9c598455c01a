// Int8Linear against its definition written out in fp64: each input row brought to [0, 1] by its
// minimum lo and range r, the result quantised per tensor to u8 (scale 1 / 255, or 1 / 127 on CPUs
// without VNNI; zero point 0) and mapped back (lo + r * dequantised), the weight to s8 per output
// row (scale max|row| / 127), the product of the dequantised values plus the bias.
#include "model/encoders/int8_linear.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace longqa {
namespace {

at::Tensor Reference(const at::Tensor& x, const at::Tensor& w_dq, const at::Tensor& b) {
  const at::Tensor xd = x.to(at::kDouble);
  const at::Tensor lo = std::get<0>(xd.min(1, /*keepdim=*/true));
  const at::Tensor hi = std::get<0>(xd.max(1, /*keepdim=*/true));
  const at::Tensor range = (hi - lo).clamp_min(1e-30);
  const double top = Int8ActivationsUse7Bits() ? 127.0 : 255.0;  // int8_linear.h says why
  const at::Tensor uq = at::round((xd - lo) / range * top).clamp(0, top);
  const at::Tensor xq = lo + range * (uq / top);
  return at::matmul(xq, w_dq.to(at::kDouble).t()) + b.to(at::kDouble);
}

// Both forms of the per-row passes (AVX2, and plain C++ for CPUs without it); row widths that are
// and are not multiples of 8.
class Int8LinearFormTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { UsePlainInt8RowPassesForTesting(GetParam()); }
  void TearDown() override { UsePlainInt8RowPassesForTesting(false); }
};

TEST_P(Int8LinearFormTest, MatchesDynamicQuantisationWrittenOut) {
  if (!Int8LinearAvailable()) GTEST_FAIL() << "no oneDNN quantized engine in this LibTorch";
  at::manual_seed(3);
  for (const int64_t in : {80, 77}) {
    const at::Tensor w = at::randn({96, in}) * 0.05;
    const at::Tensor b = at::randn({96});
    // Rows of different centres and ranges, one constant.
    at::Tensor x = at::randn({2, 7, in}) * at::linspace(0.1, 4, 7).view({1, 7, 1}) +
                   at::linspace(-1, 2, 7).view({1, 7, 1});
    x[1][3].fill_(0.75);
    const Int8Linear linear(w, b);
    // The weight's own rounding: at most half a step of its row's scale.
    const at::Tensor step = w.abs().amax(1, /*keepdim=*/true) / 127.0;
    EXPECT_TRUE(((linear.dequantized_weight() - w).abs() <= step * 0.5 + 1e-7).all().item<bool>());
    const at::Tensor got = linear.Forward(x);
    ASSERT_EQ(got.sizes(), (at::IntArrayRef{2, 7, 96}));
    const at::Tensor want =
        Reference(x.view({14, in}), linear.dequantized_weight(), b).view({2, 7, 96});
    const double err = (got.to(at::kDouble) - want).abs().max().item<double>();
    const double size = want.abs().max().item<double>();
    std::printf(
        "int8 linear (%s activations, %s row passes, %lld inputs): max |difference| %.3g, "
        "largest output %.3g\n",
        Int8ActivationsUse7Bits() ? "7-bit" : "8-bit", GetParam() ? "plain" : "AVX2 where present",
        static_cast<long long>(in), err, size);
    EXPECT_LE(err, 1e-3 * size);
    // And close to fp32 (what quantisation costs; not a property of the code, a sanity bound).
    const double fp32_err = (got - at::linear(x, w, b)).abs().max().item<double>();
    EXPECT_LE(fp32_err, 0.05 * size);
  }
}

INSTANTIATE_TEST_SUITE_P(RowPasses, Int8LinearFormTest, ::testing::Values(false, true));

// The integer GEMM under Int8Linear: every sum exact (integers below 2^24), at row counts other
// than the one its weights were packed for, widths that are not multiples of a vector, and the
// extreme values (255 times -127 and 127).
TEST(Int8GemmTest, SumsAreTheExactIntegerProducts) {
  if (!Int8Gemm::Available()) GTEST_FAIL() << "no int8 GEMM backend here";
  std::printf("int8 GEMM backend: %s\n", Int8Gemm::Backend());
  at::manual_seed(6);
  const int64_t top = Int8ActivationsUse7Bits() ? 127 : 255;
  for (const int64_t in : {64, 77, 384}) {
    for (const int64_t out : {96, 45}) {
      at::Tensor w = at::randint(-127, 128, {out, in}, at::kChar);
      w[0].fill_(-127);
      w[1].fill_(127);
      const Int8Gemm gemm(w, Int8ActivationsUse7Bits());
      for (const int64_t m : {1, 7, 300, 1500}) {
        at::Tensor a = at::randint(0, top + 1, {m, in}, at::kByte);
        a[0].fill_(static_cast<uint8_t>(top));
        const at::Tensor got = gemm.Run(a);
        ASSERT_EQ(got.sizes(), (at::IntArrayRef{m, out}));
        const at::Tensor want = at::matmul(a.to(at::kDouble), w.to(at::kDouble).t());
        EXPECT_EQ((got.to(at::kDouble) - want).abs().max().item<double>(), 0.0)
            << in << " inputs, " << out << " outputs, " << m << " rows";
      }
    }
  }
}

// GELU after the affine map, in the finishing pass of each row (AVX-512 CPUs) or after the last
// row (the plain passes, and CPUs without the fused ops): the same as GELU of the plain output.
TEST_P(Int8LinearFormTest, GeluActivationIsGeluOfTheOutput) {
  at::manual_seed(7);
  const at::Tensor w = at::randn({70, 48}) * 0.2;
  const at::Tensor b = at::randn({70});
  const at::Tensor x = at::randn({3, 9, 48});
  const Int8Linear linear(w, b);
  const at::Tensor plain = linear.Forward(x);
  const at::Tensor got = linear.Forward(x, Int8Linear::Activation::kGelu);
  ASSERT_EQ(got.sizes(), plain.sizes());
  // The fused ops' erf is within 1.5e-7 of the exact one (fused_cpu_ops.cc).
  EXPECT_LE((got - at::gelu(plain)).abs().max().item<double>(), 2e-6);
  // Not the identity: GELU moves the negative outputs.
  EXPECT_GT((got - plain).abs().max().item<double>(), 0.1);
}

// Rows of very different magnitudes (as a trained layer's output rows are) each keep 127 levels:
// a small row is not rounded on the largest row's grid.
TEST(Int8LinearTest, EachOutputRowHasItsOwnScale) {
  if (!Int8LinearAvailable()) GTEST_FAIL() << "no oneDNN quantized engine in this LibTorch";
  at::manual_seed(4);
  const at::Tensor magnitude = at::pow(10.0, at::arange(48) % 3 - 2.0).unsqueeze(1);  // 0.01-1
  const at::Tensor w = at::randn({48, 64}) * magnitude;
  const at::Tensor b = at::zeros({48});
  const Int8Linear linear(w, b);
  const at::Tensor row_error =
      ((linear.dequantized_weight() - w).abs().amax(1) / w.abs().amax(1)).max();
  EXPECT_LE(row_error.item<double>(), 0.5 / 127 + 1e-6);  // half a step of each row's own scale
  // The outputs of the small rows, relative to their own size, as close as the large rows'.
  const at::Tensor x = at::randn({32, 64});
  const at::Tensor want = at::linear(x, w, b);
  const at::Tensor rel = (linear.Forward(x) - want).abs().amax(0) / want.abs().amax(0);
  EXPECT_LE(rel.max().item<double>(), 0.05) << rel;
}

// One outsized row does not coarsen the other rows' grid (in models/demo's layers the widest row's
// range is 2-9x the median row's; here 1000x, to make the difference plain): each row's output is
// as close to fp32, relative to its own size, as it would be alone. With one range for the whole
// input the small rows would fall on a grid of steps about 1000 / 127 their own size and lose every
// digit.
TEST(Int8LinearTest, EachInputRowHasItsOwnGrid) {
  if (!Int8LinearAvailable()) GTEST_FAIL() << "no oneDNN quantized engine in this LibTorch";
  at::manual_seed(5);
  const at::Tensor w = at::randn({40, 64}) * 0.1;
  const at::Tensor b = at::zeros({40});
  const Int8Linear linear(w, b);
  at::Tensor x = at::randn({16, 64});
  x[5].mul_(1000);
  const at::Tensor want = at::linear(x, w, b);
  const at::Tensor rel = (linear.Forward(x) - want).abs().amax(1) / want.abs().amax(1);
  std::printf("int8 linear, one row 1000x the others: worst row's relative error %.3g\n",
              rel.max().item<double>());
  EXPECT_LE(rel.max().item<double>(), 0.05) << rel;
}

}  // namespace
}  // namespace longqa

namespace longqa {
namespace {

// Calibration statistics of rows x [rows, in].
Int8InputStats StatsOf(const at::Tensor& x) {
  const at::Tensor xd = x.to(at::kDouble);
  return {xd.t().matmul(xd), x.abs().amax(0).to(at::kFloat)};
}

// Inputs with a few outlier columns, as a trained encoder's: every row's range is set by them.
at::Tensor RowsWithOutlierColumns(int64_t rows, int64_t in) {
  at::Tensor x = at::randn({rows, in});
  x.select(1, 3).mul_(40);
  x.select(1, 17).mul_(25);
  return x;
}

// A calibrated layer keeps the calibration's widest columns in fp32 and puts every row on a grid
// over the other columns: its output is exactly that, written out in fp64 (both row-pass forms,
// with and without GELU).
TEST_P(Int8LinearFormTest, CalibratedLayerKeepsTheWidestColumnsInFp32) {
  at::manual_seed(13);
  const int64_t in = 64, out = 50;
  const at::Tensor w = at::randn({out, in}) * 0.1;
  const at::Tensor b = at::randn({out});
  const Int8InputStats stats = StatsOf(RowsWithOutlierColumns(500, in));
  const Int8Linear linear(w, b, &stats);
  const at::Tensor columns = linear.fp32_columns();
  ASSERT_EQ(columns.numel(), kInt8OutlierColumns);
  EXPECT_TRUE((columns == 3).any().item<bool>() && (columns == 17).any().item<bool>()) << columns;
  // Their weights are zero in the int8 matrix.
  EXPECT_EQ(linear.dequantized_weight().index_select(1, columns).abs().max().item<float>(), 0.0f);

  const at::Tensor x = RowsWithOutlierColumns(33, in);
  at::Tensor kept_mask = at::ones({in}, at::kBool);
  kept_mask.index_fill_(0, columns, false);
  const at::Tensor kept = kept_mask.nonzero().squeeze(1);
  const at::Tensor int8_part =
      Reference(x.index_select(1, kept), linear.dequantized_weight().index_select(1, kept), b);
  const at::Tensor want = int8_part + at::matmul(x.index_select(1, columns).to(at::kDouble),
                                                 w.index_select(1, columns).to(at::kDouble).t());
  const double size = want.abs().max().item<double>();
  EXPECT_LE((linear.Forward(x).to(at::kDouble) - want).abs().max().item<double>(), 1e-4 * size);
  EXPECT_LE((linear.Forward(x, Int8Linear::Activation::kGelu).to(at::kDouble) - at::gelu(want))
                .abs()
                .max()
                .item<double>(),
            1e-4 * size);
}

// What calibration buys on such inputs: the product much closer to fp32's than the uncalibrated
// layer's, whose every row's grid is stretched by the outlier columns.
TEST(Int8LinearTest, CalibrationNarrowsTheGridOfInputsWithOutlierColumns) {
  if (!Int8LinearAvailable()) GTEST_FAIL() << "no oneDNN quantized engine in this LibTorch";
  at::manual_seed(14);
  const int64_t in = 128;
  const at::Tensor w = at::randn({96, in}) * 0.1;
  const at::Tensor b = at::zeros({96});
  const Int8InputStats stats = StatsOf(RowsWithOutlierColumns(1000, in));
  const Int8Linear plain(w, b), calibrated(w, b, &stats);
  const at::Tensor x = RowsWithOutlierColumns(200, in);
  const at::Tensor want = at::linear(x, w, b);
  const auto error = [&](const Int8Linear& l) {
    return (l.Forward(x) - want).norm().item<double>() / want.norm().item<double>();
  };
  const double plain_error = error(plain), calibrated_error = error(calibrated);
  std::printf("int8 linear with outlier columns: relative error %.4g plain, %.4g calibrated\n",
              plain_error, calibrated_error);
  EXPECT_LT(calibrated_error, 0.5 * plain_error);
}

}  // namespace
}  // namespace longqa
