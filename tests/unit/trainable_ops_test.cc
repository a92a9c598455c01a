// Gradients of the kernels' autograd wrappers against plain differentiable LibTorch formulations
// (fp64, random inputs, odd sizes; exact up to 1e-10), and the forward equals the kernel's.
#include "model/encoders/trainable_ops.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include "kernels/ops.h"

namespace longqa {
namespace {

// Gradient of sum(out * weights) with respect to x, for a function built from LibTorch ops.
at::Tensor Grad(const std::function<at::Tensor(const at::Tensor&)>& f, const at::Tensor& x,
                const at::Tensor& weights) {
  at::Tensor leaf = x.detach().clone().set_requires_grad(true);
  const at::Tensor out = f(leaf);
  return torch::autograd::grad({(out * weights).sum()}, {leaf})[0];
}

TEST(TrainableOpsTest, GatherRowsGradientIsAScatterAddOfItsIndex) {
  at::manual_seed(1);
  const at::Tensor src = at::randn({37, 11}, at::kDouble);
  const at::Tensor index = at::randint(-1, 37, {101}, at::kLong);  // repeats and -1 padding
  const at::Tensor w = at::randn({101, 11}, at::kDouble);
  const auto reference = [&](const at::Tensor& s) {
    return at::where((index >= 0).unsqueeze(1), s.index_select(0, index.clamp_min(0)),
                     at::zeros({1}, s.options()));
  };
  EXPECT_TRUE(at::allclose(GatherRowsTrainable(src, index), reference(src)));
  const at::Tensor got =
      Grad([&](const at::Tensor& s) { return GatherRowsTrainable(s, index); }, src, w);
  EXPECT_LE((got - Grad(reference, src, w)).abs().max().item<double>(), 1e-10);
}

TEST(TrainableOpsTest, OverlapMergeGradientSharesEachRowsGradientAmongItsSources) {
  at::manual_seed(2);
  const int64_t n = 53, d = 7, rows = 31;
  const at::Tensor src = at::randn({n, d}, at::kDouble);
  std::vector<int64_t> offsets = {0}, sources;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < r % 4; ++k) sources.push_back((r * 13 + k * 7) % n);
    offsets.push_back(static_cast<int64_t>(sources.size()));
  }
  const at::Tensor off = at::tensor(offsets, at::kLong), srcs = at::tensor(sources, at::kLong);
  const at::Tensor w = at::randn({rows, d}, at::kDouble);
  const auto reference = [&](const at::Tensor& s) {
    std::vector<at::Tensor> out;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t b = offsets[r], e = offsets[r + 1];
      out.push_back(e > b ? s.index_select(0, srcs.narrow(0, b, e - b)).mean(0)
                          : at::zeros({d}, s.options()));
    }
    return at::stack(out);
  };
  EXPECT_TRUE(at::allclose(OverlapMergeTrainable(src, off, srcs), reference(src)));
  const at::Tensor got =
      Grad([&](const at::Tensor& s) { return OverlapMergeTrainable(s, off, srcs); }, src, w);
  EXPECT_LE((got - Grad(reference, src, w)).abs().max().item<double>(), 1e-10);
}

TEST(TrainableOpsTest, RelativeLabelGatherGradientLandsOnEachPairsLabel) {
  at::manual_seed(3);
  const int64_t rows = 23, heads = 3, labels = 9, period = 5, slots = 13;
  const at::Tensor qa = at::randn({rows, heads, labels}, at::kDouble);
  const at::Tensor table = at::randint(-1, labels, {period, slots}, at::kLong);
  const at::Tensor w = at::randn({rows, heads, slots}, at::kDouble);
  const at::Tensor full = table.repeat({(rows + period - 1) / period, 1}).narrow(0, 0, rows);
  const auto reference = [&](const at::Tensor& q) {
    const at::Tensor idx = full.clamp_min(0).unsqueeze(1).expand({rows, heads, slots});
    return q.gather(2, idx) * (full >= 0).unsqueeze(1).to(q.scalar_type());
  };
  EXPECT_TRUE(at::allclose(RelativeLabelGatherTrainable(qa, table), reference(qa)));
  const at::Tensor got =
      Grad([&](const at::Tensor& q) { return RelativeLabelGatherTrainable(q, table); }, qa, w);
  EXPECT_LE((got - Grad(reference, qa, w)).abs().max().item<double>(), 1e-10);
}

}  // namespace
}  // namespace longqa
