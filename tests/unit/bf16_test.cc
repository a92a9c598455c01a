// Precision::kBf16 against independent fp64 references. A bf16 layer rounds at known places (the
// inputs and outputs of its GEMMs and the softmax's output; residuals and LayerNorm stay fp32),
// so the reference rounds at the same places (reference_layers.h, Rounding Bf16) and must agree
// far more closely than the exact fp64 layer does; the encoders (Cluster-Former, ETC) in bf16
// stay near their fp32 states. Tolerances are what was measured, printed, with a margin.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdio>

#include "model/encoders/cluster_former.h"
#include "model/encoders/etc_encoder.h"
#include "model/encoders/fused_cpu_attention.h"
#include "model/encoders/transformer_layer.h"
#include "tests/unit/reference_layers.h"
#include "tests/unit/test_model.h"

namespace longqa {
namespace {

// d 64, 4 heads (or `heads`), FFN 128; weights std 0.1 so attention is far from uniform.
ModelConfig LayerConfig(int64_t heads = 4) {
  return ClusterFormerConfig(/*vocab_size=*/120, /*hidden_size=*/64, /*num_heads=*/heads,
                             /*intermediate_size=*/128, "SS", /*window=*/48, /*stride=*/40,
                             /*clusters_per_layer=*/4, /*max_question_tokens=*/40);
}

TensorMap Scaled(TensorMap w, double factor) {
  for (auto& [name, t] : w) {
    if (name.find("LayerNorm") == std::string::npos && t.dim() == 2) t = t * factor;
  }
  return w;
}

double MaxAbs(const at::Tensor& a) { return a.abs().max().item<double>(); }

// Heads of 16 (the fused kernel's AVX512_BF16 form) and of 32 (its AMX form, on a CPU with AMX:
// the tiles run between oneDNN's own AMX GEMMs of the same layer).
TEST(Bf16Test, LayerMatchesTheReferenceThatRoundsWhereItRounds) {
  for (const int64_t heads : {4, 2}) {
    const ModelConfig c = LayerConfig(heads);
    const TensorMap w = Scaled(RandomWeights(c, 31), 5.0);
    const TransformerLayer layer(w, "encoder.layer.0", c, Precision::kBf16);
    // Two sequences, the second padded after 29 of its 40 rows (padding is never attended to).
    const at::Tensor x = at::randn({2, 40, 64}, at::TensorOptions().dtype(at::kFloat));
    at::Tensor valid = at::ones({2, 40}, at::kBool);
    valid[1].narrow(0, 29, 11).fill_(false);
    at::InferenceMode guard;
    const at::Tensor got = layer.Forward(x, valid);
    ASSERT_EQ(got.scalar_type(), at::kFloat);  // the residual stream stays fp32
    // Where the fused kernel runs, it rounds elsewhere than LibTorch's path.
    const at::Tensor qkv = at::zeros({1, 1, 3 * 64}, at::kBFloat16);
    const AttentionRounding attention = FusedWindowAttentionApplies(qkv, heads)
                                            ? AttentionRounding::kFusedBf16Weights
                                            : AttentionRounding::kLibTorch;
    // Mean and max |difference| over the valid rows. The bound is on the mean: now and then one
    // value sits on a bf16 rounding boundary and the layer and the reference round it apart (one
    // ulp, seen once in seven runs on AMX: max 0.0059 against a typical 5e-7), which moves a few
    // outputs but not the mean.
    double rounded_sum = 0, exact_sum = 0, rounded_max = 0, exact_max = 0;
    int64_t count = 0;
    for (int64_t i = 0; i < 2; ++i) {
      const int64_t n = i == 0 ? 40 : 29;
      const at::Tensor in = x[i].narrow(0, 0, n).to(at::kDouble);
      const at::Tensor out = got[i].narrow(0, 0, n).to(at::kDouble);
      const at::Tensor to_rounded = (out - RefLayer(w, c, 0, in, Bf16, attention)).abs();
      const at::Tensor to_exact = (out - RefLayer(w, c, 0, in, Exact)).abs();
      rounded_sum += to_rounded.sum().item<double>();
      exact_sum += to_exact.sum().item<double>();
      rounded_max = std::max(rounded_max, MaxAbs(to_rounded));
      exact_max = std::max(exact_max, MaxAbs(to_exact));
      count += to_exact.numel();
    }
    const double rounded_mean = rounded_sum / count, exact_mean = exact_sum / count;
    std::printf(
        "bf16 layer, %ld heads: |difference| to the bf16-rounded reference mean %.3g max %.3g, to "
        "fp64 mean %.3g max %.3g\n",
        long(heads), rounded_mean, rounded_max, exact_mean, exact_max);
    EXPECT_GT(exact_max, 1e-3);  // it did round to bf16 (fp32 is within 2e-4 of fp64)
    EXPECT_LE(rounded_mean, 0.35 * exact_mean) << heads << " heads";
    EXPECT_LE(rounded_max, 0.05) << heads << " heads";  // LayerNorm'd states of std 1
  }
}

TEST(Bf16Test, CustomPatternLayersProjectAndFinishInBf16) {
  // ETC and the cluster layers call Query/Key/Value/Finish with their own attention between:
  // in bf16 the projections are bf16 GEMMs returned in the input's dtype.
  const ModelConfig c = LayerConfig();
  const TensorMap w = Scaled(RandomWeights(c, 32), 5.0);
  const TransformerLayer fp32(w, "encoder.layer.1", c);
  const TransformerLayer bf16(w, "encoder.layer.1", c, Precision::kBf16);
  const at::Tensor x = at::randn({30, 64});
  at::InferenceMode guard;
  const std::string s = "encoder.layer.1.attention.self.";
  const at::Tensor q = bf16.Query(x);
  ASSERT_EQ(q.scalar_type(), at::kFloat);
  const at::Tensor want_q = RefLinear(w, s + "query", x.to(at::kDouble), Bf16);
  EXPECT_LE(MaxAbs(q.to(at::kDouble) - want_q), 1e-6 + 0.01 * MaxAbs(want_q));
  EXPECT_GT(MaxAbs(q - fp32.Query(x)), 0);
  EXPECT_LE(MaxAbs(bf16.Key(x) - fp32.Key(x)), 0.02 * MaxAbs(fp32.Key(x)));
  EXPECT_LE(MaxAbs(bf16.Value(x) - fp32.Value(x)), 0.02 * MaxAbs(fp32.Value(x)));
  // ETC's inference path takes each of the three kept in bf16 for its bf16 attention.
  auto parts = [&x](const TransformerLayer& layer) {
    return at::cat({layer.QueryKeyValuePart(0, x), layer.QueryKeyValuePart(1, x),
                    layer.QueryKeyValuePart(2, x)},
                   1);
  };
  const at::Tensor qkv = parts(bf16);
  ASSERT_EQ(qkv.scalar_type(), at::kBFloat16);
  const at::Tensor separate = at::cat({q, bf16.Key(x), bf16.Value(x)}, 1);
  EXPECT_LE(MaxAbs(qkv.to(at::kFloat) - separate), 0.01 * MaxAbs(separate));
  const at::Tensor qkv32 = parts(fp32);
  ASSERT_EQ(qkv32.scalar_type(), at::kFloat);
  EXPECT_LE(MaxAbs(qkv32 - at::cat({fp32.Query(x), fp32.Key(x), fp32.Value(x)}, 1)), 1e-5);
  const at::Tensor context = at::randn({30, 64});
  const at::Tensor got = bf16.Finish(x, context).to(at::kDouble);
  const at::Tensor rounded = RefFinish(w, c, 1, x.to(at::kDouble), context.to(at::kDouble), Bf16);
  const at::Tensor exact = RefFinish(w, c, 1, x.to(at::kDouble), context.to(at::kDouble), Exact);
  const double to_rounded = (got - rounded).abs().mean().item<double>();
  const double to_exact = (got - exact).abs().mean().item<double>();
  std::printf("bf16 finish: mean |difference| to the rounded reference %.3g, to fp64 %.3g\n",
              to_rounded, to_exact);
  EXPECT_LE(to_rounded, 0.35 * to_exact);  // the mean, as in the layer test above
}

// Whole encoders: states near fp32's (initialised weights, std 0.02, as a checkpoint's are).
void ExpectNearFp32(const at::Tensor& fp32, const at::Tensor& bf16, const char* what) {
  const double diff = MaxAbs(bf16 - fp32);
  const double cosine = at::cosine_similarity(bf16, fp32, 1).min().item<double>();
  std::printf("%s bf16 against fp32: max |difference| %.3g (states up to %.3g), min cosine %.5f\n",
              what, diff, MaxAbs(fp32), cosine);
  EXPECT_GT(diff, 0);  // it did run in bf16
  EXPECT_LE(diff, 0.05 * MaxAbs(fp32));
  EXPECT_GE(cosine, 0.999);
}

TEST(Bf16Test, ClusterFormerStatesStayCloseToFp32) {
  const ModelConfig c =
      ClusterFormerConfig(/*vocab_size=*/120, /*hidden_size=*/64,
                          /*num_heads=*/4, /*intermediate_size=*/128, "SCSS", 16, 12, 4, 40);
  const TensorMap w = RandomWeights(c, 33);
  const WindowPlan plan = PlanWindows(
      {testing_support::RandomInput(5, 70, 120, 34), testing_support::RandomInput(9, 30, 120, 35)},
      c.window_tokens, c.stride_tokens, c.special.pad);
  at::InferenceMode guard;
  const at::Tensor fp32 = ClusterFormerEncoder(c, w).Forward(plan, at::kCPU);
  const at::Tensor bf16 = ClusterFormerEncoder(c, w, Precision::kBf16).Forward(plan, at::kCPU);
  ASSERT_EQ(bf16.scalar_type(), at::kFloat);
  ExpectNearFp32(fp32, bf16, "Cluster-Former");
}

TEST(Bf16Test, EtcStatesStayCloseToFp32) {
  ModelConfig c;
  c.architecture = Architecture::kEtc;
  c.vocab_size = 120;
  c.hidden_size = 64;
  c.num_heads = 4;
  c.intermediate_size = 128;
  c.layers = "EEE";
  c.etc.radius = 6;
  c.etc.relative_clip = 4;
  ASSERT_TRUE(ValidateModelConfig(c).ok()) << ValidateModelConfig(c).message();
  const TensorMap w = RandomWeights(c, 36);
  std::vector<int32_t> ids;
  std::vector<int64_t> paragraph;
  for (int64_t p = 0; p < 6; ++p) {
    ids.push_back(c.special.paragraph);
    paragraph.push_back(p);
    for (int64_t t = 0; t < 9 + 3 * p; ++t) {
      ids.push_back(static_cast<int32_t>(5 + (7 * t + 11 * p) % 100));
      paragraph.push_back(p);
    }
  }
  const std::vector<EtcInput> inputs = {MakeEtcInput(c, {7, 8, 9, 10}, ids, paragraph, 6)};
  at::InferenceMode guard;
  const EtcOutput fp32 = EtcEncoder(c, w).Forward(inputs, at::kCPU);
  const EtcOutput bf16 =
      EtcEncoder(c, w, kEtcScoreBudget, Precision::kBf16).Forward(inputs, at::kCPU);
  ExpectNearFp32(fp32.long_states, bf16.long_states, "ETC long");
  ExpectNearFp32(fp32.global_states, bf16.global_states, "ETC global");
}

}  // namespace
}  // namespace longqa
