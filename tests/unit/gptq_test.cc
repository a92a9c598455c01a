// GPTQ rounding (model/encoders/gptq.h) against plain rounding to the nearest step, on the same
// grid: on inputs drawn like the calibration's (correlated columns, as a trained layer's inputs
// are) the product x Wᵀ keeps more of its value; every weight stays on its row's grid.
#include "model/encoders/gptq.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace longqa {
namespace {

// Rows whose columns are correlated: standard normals through a random mixing matrix, a few
// columns much wider than the rest.
at::Tensor CorrelatedRows(int64_t rows, const at::Tensor& mixing) {
  return at::matmul(at::randn({rows, mixing.size(0)}, at::kDouble), mixing);
}

TEST(GptqTest, KeepsTheProductOnInputsLikeTheCalibration) {
  at::manual_seed(11);
  const int64_t in = 96, out = 40;
  at::Tensor mixing = at::randn({in, in}, at::kDouble) * 0.3 + at::eye(in, at::kDouble);
  mixing.slice(1, 0, 3).mul_(5);
  const at::Tensor w = at::randn({out, in}, at::kDouble) * 0.1;
  const at::Tensor scale = w.abs().amax(1) / 127;
  const at::Tensor calibration = CorrelatedRows(4000, mixing);
  const at::Tensor gptq = GptqRoundRows(w, scale, calibration.t().matmul(calibration));
  ASSERT_EQ(gptq.scalar_type(), at::kChar);
  ASSERT_EQ(gptq.sizes(), w.sizes());
  const at::Tensor nearest = at::round(w / scale.unsqueeze(1)).clamp(-127, 127);
  // On the grid, and a weight moves at most a few steps from its nearest one.
  EXPECT_LE(gptq.to(at::kInt).abs().max().item<int>(), 127);
  const double moved = (gptq.to(at::kDouble) - nearest).abs().max().item<double>();
  EXPECT_GT(moved, 0) << "GPTQ rounded every weight to its nearest step";
  // Held-out inputs of the same kind: the product's error against the exact one.
  const at::Tensor x = CorrelatedRows(2000, mixing);
  const at::Tensor exact = at::matmul(x, w.t());
  const auto error = [&](const at::Tensor& q) {
    return (at::matmul(x, (q.to(at::kDouble) * scale.unsqueeze(1)).t()) - exact)
               .norm()
               .item<double>() /
           exact.norm().item<double>();
  };
  const double gptq_error = error(gptq), nearest_error = error(nearest);
  std::printf("x Wᵀ relative error: nearest %.4g, GPTQ %.4g (moved up to %.0f steps)\n",
              nearest_error, gptq_error, moved);
  EXPECT_LT(gptq_error, 0.8 * nearest_error);
}

// Uncorrelated inputs of equal width give GPTQ nothing to trade: it rounds (nearly) as plain
// rounding does, and a column the calibration never set is rounded plainly, without NaN.
TEST(GptqTest, RoundsPlainlyWhereTheInputsCarryNoCorrelation) {
  at::manual_seed(12);
  const at::Tensor w = at::randn({24, 32}, at::kDouble);
  const at::Tensor scale = w.abs().amax(1) / 127;
  at::Tensor h = at::eye(32, at::kDouble) * 1000;
  h[7][7] = 0;  // never set
  const at::Tensor gptq = GptqRoundRows(w, scale, h).to(at::kDouble);
  const at::Tensor nearest = at::round(w / scale.unsqueeze(1)).clamp(-127, 127);
  EXPECT_TRUE(at::equal(gptq, nearest));
}

}  // namespace
}  // namespace longqa
