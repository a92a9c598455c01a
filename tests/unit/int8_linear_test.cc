// Int8Linear against its definition written out in fp64: the input quantised per tensor to u8
// (scale (max - min) / 255 over a range holding 0, or / 127 on CPUs without VNNI; zero point
// round(-min / scale)), the weight to
// s8 per output row (scale max|row| / 127), the product of the dequantised values plus the bias.
#include "model/encoders/int8_linear.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace longqa {
namespace {

at::Tensor Reference(const at::Tensor& x, const at::Tensor& w_dq, const at::Tensor& b) {
  const at::Tensor xd = x.to(at::kDouble);
  const double lo = std::min(0.0, xd.min().item<double>());
  const double hi = std::max(0.0, xd.max().item<double>());
  const double top = Int8ActivationsUse7Bits() ? 127.0 : 255.0;  // int8_linear.h says why
  const double scale = (hi - lo) / top;
  const double zero = std::nearbyint(-lo / scale);
  const at::Tensor xq = (at::round(xd / scale) + zero).clamp(0, top);
  return at::matmul((xq - zero) * scale, w_dq.to(at::kDouble).t()) + b.to(at::kDouble);
}

TEST(Int8LinearTest, MatchesDynamicQuantisationWrittenOut) {
  if (!Int8LinearAvailable()) GTEST_FAIL() << "no oneDNN quantized engine in this LibTorch";
  at::manual_seed(3);
  const at::Tensor w = at::randn({96, 80}) * 0.05;
  const at::Tensor b = at::randn({96});
  const at::Tensor x = at::randn({2, 7, 80}) * 2;
  const Int8Linear linear(w, b);
  // The weight's own rounding: at most half a step of its row's scale.
  const at::Tensor step = w.abs().amax(1, /*keepdim=*/true) / 127.0;
  EXPECT_TRUE(((linear.dequantized_weight() - w).abs() <= step * 0.5 + 1e-7).all().item<bool>());
  const at::Tensor got = linear.Forward(x);
  ASSERT_EQ(got.sizes(), (at::IntArrayRef{2, 7, 96}));
  const at::Tensor want =
      Reference(x.view({14, 80}), linear.dequantized_weight(), b).view({2, 7, 96});
  const double err = (got.to(at::kDouble) - want).abs().max().item<double>();
  const double size = want.abs().max().item<double>();
  std::printf("int8 linear (%s activations): max |difference| %.3g, largest output %.3g\n",
              Int8ActivationsUse7Bits() ? "7-bit" : "8-bit", err, size);
  EXPECT_LE(err, 1e-3 * size);
  // And close to fp32 (what quantisation costs; not a property of the code, a sanity bound).
  const double fp32_err = (got - at::linear(x, w, b)).abs().max().item<double>();
  EXPECT_LE(fp32_err, 0.05 * size);
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

}  // namespace
}  // namespace longqa
