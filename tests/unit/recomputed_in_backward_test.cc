// RecomputedInBackward (activation checkpointing) against the same function with its graph kept:
// the same outputs, the same gradients for its inputs and for weights it reads but does not take
// as inputs (fp64, exact up to 1e-12), the function run once more in backward, and a weight's
// gradient even when no input requires grad.
#include "model/encoders/recomputed_in_backward.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace longqa {
namespace {

at::Tensor Random(std::vector<int64_t> shape, uint64_t seed) {
  at::Generator g = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randn(shape, g, at::TensorOptions().dtype(at::kDouble));
}

TEST(RecomputedInBackwardTest, GradientsMatchTheKeptGraphAndTheFunctionRunsAgain) {
  const at::Tensor w = Random({5, 5}, 1).requires_grad_(true);
  int runs = 0;
  // Two outputs from two inputs, through a weight that is not an input (a layer's weights).
  RecomputableFunction layer = [&w, &runs](const std::vector<at::Tensor>& x) {
    ++runs;
    const at::Tensor h = at::tanh(at::matmul(x[0], w)) * x[1];
    return std::vector<at::Tensor>{h.softmax(-1), at::matmul(h, w.t()).sum(0)};
  };
  const at::Tensor a = Random({3, 5}, 2), b = Random({3, 5}, 3);
  const at::Tensor mix0 = Random({3, 5}, 4), mix1 = Random({5}, 5);
  auto run = [&](bool recompute) {
    const at::Tensor a_leaf = a.clone().requires_grad_(true),
                     b_leaf = b.clone().requires_grad_(true);
    w.mutable_grad() = at::Tensor();
    runs = 0;
    const std::vector<at::Tensor> out =
        recompute ? RecomputedInBackward(layer, {a_leaf, b_leaf}) : layer({a_leaf, b_leaf});
    ((out[0] * mix0).sum() + (out[1] * mix1).sum()).backward();
    return std::vector<at::Tensor>{out[0].detach(), out[1].detach(),  a_leaf.grad(),
                                   b_leaf.grad(),   w.grad().clone(), at::scalar_tensor(runs)};
  };
  const std::vector<at::Tensor> kept = run(false), recomputed = run(true);
  EXPECT_EQ(kept[5].item<int>(), 1);
  EXPECT_EQ(recomputed[5].item<int>(), 2);  // forward, then again in backward
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(recomputed[i].defined());
    EXPECT_LE((kept[i] - recomputed[i]).abs().max().item<double>(), 1e-12);
  }
}

TEST(RecomputedInBackwardTest, WeightsGetGradientsWhenNoInputRequiresGrad) {
  // A first layer over frozen embeddings: its input needs no gradient, its weights do.
  const at::Tensor w = Random({4, 4}, 6).requires_grad_(true);
  const at::Tensor x = Random({2, 4}, 7);
  RecomputableFunction layer = [&w](const std::vector<at::Tensor>& in) {
    return std::vector<at::Tensor>{at::matmul(in[0], w).relu()};
  };
  layer({x})[0].sum().backward();
  const at::Tensor expected = w.grad().clone();
  w.mutable_grad() = at::Tensor();
  const std::vector<at::Tensor> out = RecomputedInBackward(layer, {x});
  ASSERT_TRUE(out[0].requires_grad());
  out[0].sum().backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_LE((w.grad() - expected).abs().max().item<double>(), 1e-12);
}

TEST(RecomputedInBackwardTest, WithoutAutogradTheFunctionJustRuns) {
  const at::NoGradGuard no_grad;
  int runs = 0;
  RecomputableFunction twice = [&runs](const std::vector<at::Tensor>& x) {
    ++runs;
    return std::vector<at::Tensor>{x[0] * 2};
  };
  const at::Tensor x = Random({3}, 8);
  const std::vector<at::Tensor> out = RecomputedInBackward(twice, {x});
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(out[0].requires_grad());
  EXPECT_TRUE(at::equal(out[0], x * 2));
}

}  // namespace
}  // namespace longqa
