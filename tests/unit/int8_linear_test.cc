// Int8Linear against its definition written out in fp64: the input quantised per tensor to u8
// (scale (max - min) / 255 over a range holding 0, zero point round(-min / scale)), the weight to
// s8 (scale max|w| / 127), the product of the dequantised values plus the bias.
#include "model/encoders/int8_linear.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace longqa {
namespace {

at::Tensor Reference(const at::Tensor& x, const at::Tensor& w_dq, const at::Tensor& b) {
  const at::Tensor xd = x.to(at::kDouble);
  const double lo = std::min(0.0, xd.min().item<double>());
  const double hi = std::max(0.0, xd.max().item<double>());
  const double scale = (hi - lo) / 255.0;
  const double zero = std::nearbyint(-lo / scale);
  const at::Tensor xq = (at::round(xd / scale) + zero).clamp(0, 255);
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
  const double step = w.abs().max().item<double>() / 127.0;
  EXPECT_TRUE(((linear.dequantized_weight() - w).abs() <= step * 0.5 + 1e-7).all().item<bool>());
  const at::Tensor got = linear.Forward(x);
  ASSERT_EQ(got.sizes(), (at::IntArrayRef{2, 7, 96}));
  const at::Tensor want =
      Reference(x.view({14, 80}), linear.dequantized_weight(), b).view({2, 7, 96});
  const double err = (got.to(at::kDouble) - want).abs().max().item<double>();
  const double size = want.abs().max().item<double>();
  std::printf("int8 linear: max |difference| %.3g, largest output %.3g\n", err, size);
  EXPECT_LE(err, 1e-3 * size);
  // And close to fp32 (what quantisation costs; not a property of the code, a sanity bound).
  const double fp32_err = (got - at::linear(x, w, b)).abs().max().item<double>();
  EXPECT_LE(fp32_err, 0.05 * size);
}

}  // namespace
}  // namespace longqa
