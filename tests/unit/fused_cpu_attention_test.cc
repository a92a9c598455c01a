// FusedWindowAttention (model/encoders/fused_cpu_attention.h) against the plain formula in fp64
// on random inputs: every head width it takes (dh 16 to 128), window lengths that are not
// multiples of the kernel's 16 keys or its row blocks (1, 17, 33, 100, 276), padding keys, and a
// window whose keys are all padding; fp32 and bf16 Q, K, V (bf16 heads of 32 and 64 take the AMX
// kernel where the CPU has AMX). Tolerance: fp32 2e-6 absolute + 1e-6 relative (sums of up to
// 276 terms; the worst ratio is printed); bf16 twice the rounding bounds, below, against the
// fp64 result from the same bf16 inputs. And the
// transformer layer that uses it: its inference path equals its autograd path, which never takes
// the fused kernel.
#include "model/encoders/fused_cpu_attention.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>
#include <vector>

#include "model/encoders/fused_cpu_attention_avx2.h"
#include "model/encoders/fused_cpu_ops.h"
#include "model/encoders/transformer_layer.h"
#include "tests/unit/test_model.h"

namespace longqa {
namespace {

// The plain formula in fp64: per head, softmax(q k^T / sqrt(dh), padding keys at -1e30) v; and
// the same weights applied to |v|, the scale of the error of weights rounded to bf16.
struct Expected {
  at::Tensor context, magnitude;
};
Expected Reference(const at::Tensor& qkv, const at::Tensor& valid, int64_t heads) {
  const int64_t b = qkv.size(0), t = qkv.size(1), d = qkv.size(2) / 3, dh = d / heads;
  const at::Tensor x = qkv.to(at::kDouble).view({b, t, 3, heads, dh}).permute({2, 0, 3, 1, 4});
  at::Tensor scores = at::matmul(x[0], x[1].transpose(-1, -2)) / std::sqrt(double(dh));
  scores = scores.masked_fill(valid.logical_not().view({b, 1, 1, t}), -1e30);
  const at::Tensor weights = at::softmax(scores, -1);
  const auto token_major = [&](const at::Tensor& y) {
    return y.transpose(1, 2).reshape({b, t, d});
  };
  return {token_major(at::matmul(weights, x[2])), token_major(at::matmul(weights, x[2].abs()))};
}

struct Case {
  int64_t windows, tokens, heads, dh;
};

TEST(FusedCpuAttentionTest, MatchesTheFormulaInFp64) {
  if (!FusedCpuOpsAvailable()) {
    // bf16 layers then take LibTorch's path (tested by the encoder tests), fp32 ones the AVX2
    // form (tested below); the AVX-512 kernels cannot run.
    EXPECT_FALSE(FusedWindowAttentionApplies(at::zeros({1, 4, 48}, at::kBFloat16), 1));
    GTEST_SKIP() << "this CPU has no AVX-512 + bf16 instructions: the fused kernel is not used";
  }
  at::manual_seed(11);
  const std::vector<Case> cases = {{3, 276, 12, 64}, {2, 17, 2, 16},  {2, 1, 1, 32},
                                   {2, 33, 3, 128},  {1, 100, 4, 48}, {2, 50, 2, 80},
                                   {1, 40, 1, 96},   {1, 41, 1, 112}, {4, 276, 12, 32},
                                   {2, 17, 2, 32},   {3, 45, 2, 64},  {3, 33, 3, 32}};
  for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    for (const Case& c : cases) {
      const int64_t d = c.heads * c.dh;
      // Scores of a few units, so the softmax is far from uniform.
      const at::Tensor qkv = (at::randn({c.windows, c.tokens, 3 * d}) * 0.7).to(dtype);
      at::Tensor valid = at::ones({c.windows, c.tokens}, at::kBool);
      if (c.tokens > 1) valid[0].narrow(0, c.tokens / 2, c.tokens - c.tokens / 2).fill_(false);
      if (c.windows > 2) valid[2].fill_(false);                           // no valid key at all
      if (c.windows > 1 && c.tokens > 3) valid[1][c.tokens / 3] = false;  // one inside
      ASSERT_TRUE(FusedWindowAttentionApplies(qkv, c.heads));
      const at::Tensor got = FusedWindowAttention(qkv, valid, c.heads);
      const Expected expected = Reference(qkv, valid, c.heads);
      const at::Tensor& want = expected.context;
      ASSERT_EQ(got.sizes(), want.sizes());
      ASSERT_EQ(got.scalar_type(), dtype);
      // bf16: the weights are rounded to bf16 for the dot products or the AMX tiles (each 2^-9
      // relative: at most 2^-9 sum_j w_j |v_j| in all); fp32 sums; the output rounded once (2^-8
      // relative). Both bounds doubled.
      const at::Tensor tolerance = dtype == at::kFloat
                                       ? 2e-6 + 1e-6 * want.abs()
                                       : 1e-6 + want.abs() / 128 + expected.magnitude / 256;
      const double worst = ((got.to(at::kDouble) - want).abs() / tolerance).max().item<double>();
      std::printf("%s windows %ld tokens %ld heads %ld dh %ld: worst error / tolerance %.3f\n",
                  at::toString(dtype), long(c.windows), long(c.tokens), long(c.heads), long(c.dh),
                  worst);
      EXPECT_LE(worst, 1.0) << at::toString(dtype) << " dh " << c.dh << " tokens " << c.tokens;
    }
  }
}

// The AVX2 form (fused_cpu_attention_avx2.h), called directly so that it runs on AVX-512 CPUs
// too (FusedWindowAttention takes it only where the AVX-512 forms do not apply): every head width
// it takes (dh 8 to 64), lengths that are not multiples of its 8 keys or 6-row blocks, padding keys
// and a window of padding only, against the fp64 formula. Tolerance as above for fp32.
TEST(FusedCpuAttentionTest, Avx2FormMatchesTheFormulaInFp64) {
  if (!Avx2AttentionAvailable()) GTEST_SKIP() << "this CPU has no AVX2 + FMA";
  at::manual_seed(12);
  const std::vector<Case> cases = {{3, 276, 12, 64}, {2, 17, 2, 16},  {2, 1, 1, 32},
                                   {3, 33, 3, 8},    {1, 100, 4, 48}, {2, 50, 2, 40},
                                   {1, 40, 1, 56},   {1, 41, 1, 24},  {4, 276, 12, 32},
                                   {3, 45, 2, 64},   {3, 7, 3, 32},   {2, 13, 2, 64}};
  for (const Case& c : cases) {
    const int64_t d = c.heads * c.dh;
    ASSERT_TRUE(Avx2AttentionTakesHeadWidth(c.dh));
    const at::Tensor qkv = at::randn({c.windows, c.tokens, 3 * d}) * 0.7;
    at::Tensor valid = at::ones({c.windows, c.tokens}, at::kBool);
    if (c.tokens > 1) valid[0].narrow(0, c.tokens / 2, c.tokens - c.tokens / 2).fill_(false);
    if (c.windows > 2) valid[2].fill_(false);
    if (c.windows > 1 && c.tokens > 3) valid[1][c.tokens / 3] = false;
    at::Tensor got = at::full({c.windows, c.tokens, d}, NAN);
    Avx2WindowAttention(qkv.data_ptr<float>(), valid.data_ptr<bool>(), c.windows, c.tokens, d,
                        c.heads, got.data_ptr<float>());
    const at::Tensor want = Reference(qkv, valid, c.heads).context;
    const double worst =
        ((got.to(at::kDouble) - want).abs() / (2e-6 + 1e-6 * want.abs())).max().item<double>();
    std::printf("AVX2 windows %ld tokens %ld heads %ld dh %ld: worst error / tolerance %.3f\n",
                long(c.windows), long(c.tokens), long(c.heads), long(c.dh), worst);
    EXPECT_LE(worst, 1.0) << "dh " << c.dh << " tokens " << c.tokens;  // NaN fails too
  }
  EXPECT_FALSE(Avx2AttentionTakesHeadWidth(12));
  EXPECT_FALSE(Avx2AttentionTakesHeadWidth(72));
}

// fp32 heads with bf16_products (the int8 layers' attention): against the fp64 formula on the
// inputs rounded to bf16 (what the kernel multiplies), within the weights' rounding bound doubled
// (the context stays fp32: no output rounding); and exactly the bf16 heads' result before that
// path rounds its output, at head widths the AMX form never takes (its sums run in another order).
TEST(FusedCpuAttentionTest, Bf16ProductsOfFp32HeadsMatchTheFormulaOnRoundedInputs) {
  if (!FusedCpuOpsAvailable()) {
    EXPECT_FALSE(FusedWindowAttentionTakesBf16Products(at::zeros({1, 4, 3 * 32}), 2));
    GTEST_SKIP() << "this CPU has no AVX-512 + bf16 instructions";
  }
  at::manual_seed(13);
  const std::vector<Case> cases = {{3, 276, 12, 64}, {2, 17, 2, 16},  {2, 33, 3, 128},
                                   {4, 276, 12, 32}, {1, 100, 4, 48}, {3, 45, 2, 16}};
  for (const Case& c : cases) {
    const int64_t d = c.heads * c.dh;
    const at::Tensor qkv = at::randn({c.windows, c.tokens, 3 * d}) * 0.7;
    at::Tensor valid = at::ones({c.windows, c.tokens}, at::kBool);
    if (c.tokens > 1) valid[0].narrow(0, c.tokens / 2, c.tokens - c.tokens / 2).fill_(false);
    if (c.windows > 2) valid[2].fill_(false);
    ASSERT_TRUE(FusedWindowAttentionTakesBf16Products(qkv, c.heads));
    const at::Tensor got = FusedWindowAttention(qkv, valid, c.heads, /*bf16_products=*/true);
    ASSERT_EQ(got.scalar_type(), at::kFloat);
    const at::Tensor rounded = qkv.to(at::kBFloat16);
    const Expected expected = Reference(rounded, valid, c.heads);
    const at::Tensor tolerance = 1e-6 + expected.magnitude / 256;
    const double worst =
        ((got.to(at::kDouble) - expected.context).abs() / tolerance).max().item<double>();
    std::printf("bf16 products windows %ld tokens %ld heads %ld dh %ld: worst / tolerance %.3f\n",
                long(c.windows), long(c.tokens), long(c.heads), long(c.dh), worst);
    EXPECT_LE(worst, 1.0) << "dh " << c.dh << " tokens " << c.tokens;
    // Not the fp32 arithmetic's result: the inputs were rounded.
    EXPECT_GT((got - FusedWindowAttention(qkv, valid, c.heads)).abs().max().item<double>(), 0);
    if (c.dh != 32 && c.dh != 64) {
      EXPECT_TRUE(got.to(at::kBFloat16).equal(FusedWindowAttention(rounded, valid, c.heads)))
          << "dh " << c.dh;
    }
  }
}

TEST(FusedCpuAttentionTest, TakesOnlyWhatItComputes) {
  const bool avx512 = FusedCpuOpsAvailable();
  const bool any = avx512 || Avx2AttentionAvailable();
  EXPECT_EQ(FusedWindowAttentionApplies(at::zeros({2, 5, 3 * 64}), 2), any);
  EXPECT_EQ(FusedWindowAttentionApplies(at::zeros({2, 5, 3 * 64}, at::kBFloat16), 2), avx512);
  EXPECT_FALSE(FusedWindowAttentionApplies(at::zeros({2, 5, 3 * 64}, at::kDouble), 2));
  // dh 24: the AVX2 form's (fp32) only; dh 96: the AVX-512 forms' only.
  EXPECT_EQ(FusedWindowAttentionApplies(at::zeros({2, 5, 3 * 48}), 2), any);
  EXPECT_FALSE(FusedWindowAttentionApplies(at::zeros({2, 5, 3 * 48}, at::kBFloat16), 2));
  EXPECT_EQ(FusedWindowAttentionApplies(at::zeros({2, 5, 3 * 96}), 1), avx512);
  EXPECT_FALSE(FusedWindowAttentionApplies(at::zeros({2, 5, 3 * 36}), 3));   // dh 12
  EXPECT_FALSE(FusedWindowAttentionApplies(at::zeros({2, 5, 3 * 144}), 1));  // dh 144
  EXPECT_FALSE(FusedWindowAttentionApplies(at::zeros({2, 5, 3 * 64}), 3));   // 64 / 3
  EXPECT_FALSE(FusedWindowAttentionApplies(at::zeros({5, 2, 3 * 64}).transpose(0, 1), 2));
  EXPECT_FALSE(FusedWindowAttentionApplies(at::zeros({2, 5, 3 * 64}).requires_grad_(true), 2));
  EXPECT_THROW(FusedWindowAttention(at::zeros({2, 5, 3 * 36}), at::ones({2, 5}, at::kBool), 3),
               std::invalid_argument);
  // bf16 products: fp32 heads the AVX-512 form takes (not bf16 heads, not the AVX2 form's dh 24).
  EXPECT_EQ(FusedWindowAttentionTakesBf16Products(at::zeros({2, 5, 3 * 64}), 2), avx512);
  EXPECT_FALSE(FusedWindowAttentionTakesBf16Products(at::zeros({2, 5, 3 * 64}, at::kBFloat16), 2));
  EXPECT_FALSE(FusedWindowAttentionTakesBf16Products(at::zeros({2, 5, 3 * 48}), 2));
  EXPECT_THROW(FusedWindowAttention(at::zeros({2, 5, 3 * 48}), at::ones({2, 5}, at::kBool), 2,
                                    /*bf16_products=*/true),
               std::invalid_argument);
  if (any) {
    EXPECT_THROW(FusedWindowAttention(at::zeros({2, 5, 3 * 64}), at::ones({2, 4}, at::kBool), 2),
                 std::invalid_argument);
  }
}

// A layer's weights twice: frozen (the inference path) and as trainable copies (autograd path).
struct LayerWeights {
  TensorMap frozen, trainable;
};
LayerWeights FrozenAndTrainable(const ModelConfig& c, uint64_t seed) {
  LayerWeights w{RandomWeights(c, seed), {}};
  for (const auto& [name, t] : w.frozen) w.trainable[name] = t.clone().requires_grad_(true);
  return w;
}

// d 128 with 4 heads of 32: the layer's fp32 inference path takes the fused kernel on this CPU;
// the autograd path (trainable weights) takes LibTorch's formula. Windows of different padding.
TEST(FusedCpuAttentionTest, LayerInferencePathEqualsTheAutogradPath) {
  const ModelConfig c = ClusterFormerConfig(/*vocab_size=*/120, /*hidden_size=*/128,
                                            /*num_heads=*/4, /*intermediate_size=*/256, "S",
                                            /*window=*/48, /*stride=*/40,
                                            /*clusters_per_layer=*/4, /*max_question_tokens=*/40);
  const auto [frozen, trainable] = FrozenAndTrainable(c, 31);
  at::manual_seed(32);
  const at::Tensor x = at::randn({3, 45, 128});
  at::Tensor valid = at::ones({3, 45}, at::kBool);
  valid[1].narrow(0, 30, 15).fill_(false);
  const at::Tensor trained = TransformerLayer(trainable, "encoder.layer.0", c).Forward(x, valid);
  ASSERT_TRUE(trained.requires_grad());
  at::InferenceMode guard;
  const at::Tensor inferred = TransformerLayer(frozen, "encoder.layer.0", c).Forward(x, valid);
  EXPECT_LE((trained.detach() - inferred).abs().max().item<double>(), 1e-5);
}

// 80 windows of 45 tokens: the inference path runs them in groups of kInferenceChunkRows / 45 = 34
// windows written into one output, or over the input (ForwardReplacing); the autograd path
// concatenates its groups' outputs. Between groups the layer asks its stop check.
TEST(FusedCpuAttentionTest, LayerInferenceGroupsEqualTheAutogradPathAndAskTheStopCheck) {
  const ModelConfig c = ClusterFormerConfig(/*vocab_size=*/120, /*hidden_size=*/64,
                                            /*num_heads=*/2, /*intermediate_size=*/128, "S",
                                            /*window=*/48, /*stride=*/40,
                                            /*clusters_per_layer=*/4, /*max_question_tokens=*/40);
  const auto [frozen, trainable] = FrozenAndTrainable(c, 33);
  at::manual_seed(34);
  const int64_t windows = 80, t = 45;
  ASSERT_GT(windows * t, 2 * kInferenceChunkRows);  // at least three groups, the last partial
  const at::Tensor x = at::randn({windows, t, 64});
  at::Tensor valid = at::ones({windows, t}, at::kBool);
  valid[windows - 1].narrow(0, 20, 25).fill_(false);
  const at::Tensor trained = TransformerLayer(trainable, "encoder.layer.0", c).Forward(x, valid);
  at::InferenceMode guard;
  const at::Tensor inferred = TransformerLayer(frozen, "encoder.layer.0", c).Forward(x, valid);
  ASSERT_EQ(inferred.sizes(), x.sizes());
  EXPECT_LE((trained.detach() - inferred).abs().max().item<double>(), 1e-5);
  // ForwardReplacing: the same output, written over its input's storage.
  const TransformerLayer layer(frozen, "encoder.layer.0", c);
  at::Tensor given = x.clone();
  const void* storage = given.data_ptr();
  const at::Tensor replaced = layer.ForwardReplacing(std::move(given), valid);
  EXPECT_EQ(replaced.data_ptr(), storage);
  EXPECT_TRUE(at::equal(replaced, inferred));

  // The stop check is asked between groups (two asks for three groups), the output unchanged
  // while it says go on; once it says stop, the layer throws BatchStopped before the next group.
  int asked = 0;
  const StopCheck go_on = [&] { return ++asked < 0; };
  EXPECT_TRUE(at::equal(layer.ForwardReplacing(x.clone(), valid, go_on), inferred));
  EXPECT_EQ(asked, 2);
  asked = 0;
  const StopCheck stop_at_second = [&] { return ++asked == 2; };
  EXPECT_THROW(layer.ForwardReplacing(x.clone(), valid, stop_at_second), BatchStopped);
  EXPECT_EQ(asked, 2);
  asked = 0;
  EXPECT_THROW(layer.Forward(x, valid, stop_at_second), BatchStopped);
  EXPECT_EQ(asked, 2);
}

}  // namespace
}  // namespace longqa
