// The ETC encoder against an independent fp64 formulation: full attention over [global; long]
// with every pair's relative label and mask written out one pair at a time (no blocking, no
// gathers). The model runs blocked l2l attention in fp32, in chunks: tolerance 2e-4 absolute.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>

#include "model/encoders/etc_encoder.h"
#include "model/encoders/fused_cpu_attention_avx2.h"
#include "model/encoders/fused_cpu_ops.h"
#include "model/encoders/fused_etc_attention.h"
#include "model/encoders/int8_linear.h"
#include "model/encoders/precision.h"
#include "model/engine.h"
#include "tests/unit/reference_layers.h"
#include "tests/unit/test_model.h"

namespace longqa {
namespace {

using testing_support::SpreadWeights;

constexpr double kTolerance = 2e-4;

ModelConfig EtcConfig(int64_t layers, int64_t radius, int64_t clip, bool shared, bool hard_mask) {
  ModelConfig c;
  c.architecture = Architecture::kEtc;
  c.vocab_size = 120;
  c.hidden_size = 16;
  c.num_heads = 2;
  c.intermediate_size = 24;
  c.layers = std::string(layers, 'E');
  c.etc.radius = radius;
  c.etc.relative_clip = clip;
  c.etc.shared_projections = shared;
  c.etc.hard_g2l_mask = hard_mask;
  return c;
}

EtcInput RandomEtcInput(const ModelConfig& c, int64_t question, std::vector<int64_t> paragraphs,
                        uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> q, ids;
  std::vector<int64_t> para;
  for (int64_t i = 0; i < question; ++i) q.push_back(5 + rng() % 100);
  for (size_t p = 0; p < paragraphs.size(); ++p) {
    ids.push_back(c.special.paragraph);
    para.push_back(static_cast<int64_t>(p));
    for (int64_t t = 0; t < paragraphs[p]; ++t) {
      ids.push_back(5 + rng() % 100);
      para.push_back(static_cast<int64_t>(p));
    }
  }
  return MakeEtcInput(c, q, ids, para, static_cast<int64_t>(paragraphs.size()));
}

// As RandomEtcInput, with entity words (config etc.entity_globals): the two-piece word
// (110 111) opens every paragraph of three tokens or more, the three-piece (112 113 114) closes
// every third one, and (115 116) sits once in the first: the first two recur, so they get entity
// tokens linked to their mentions (etc_plan.h).
EtcInput EntityEtcInput(const ModelConfig& c, int64_t question, std::vector<int64_t> paragraphs,
                        uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> q, ids;
  std::vector<int64_t> para;
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (int64_t i = 0; i < question; ++i) q.push_back(5 + rng() % 100);
  int64_t byte = 0;
  auto add_word = [&](std::vector<int32_t> pieces, int64_t p) {
    for (int32_t id : pieces) {
      ids.push_back(id);
      para.push_back(p);
      spans.emplace_back(byte, byte + 1);
    }
    byte += 2;
  };
  for (size_t p = 0; p < paragraphs.size(); ++p) {
    const int64_t n = static_cast<int64_t>(p);
    ids.push_back(c.special.paragraph);
    para.push_back(n);
    spans.emplace_back(byte, byte);
    int64_t left = paragraphs[p];
    if (left >= 3) add_word({110, 111}, n), left -= 2;
    if (p == 0 && left >= 3) add_word({115, 116}, n), left -= 2;
    const bool closes = p % 3 == 0 && left >= 3;
    for (int64_t t = 0; t < left - (closes ? 3 : 0); ++t) add_word({5 + int32_t(rng() % 100)}, n);
    if (closes) add_word({112, 113, 114}, n);
  }
  return MakeEtcInput(c, q, ids, para, static_cast<int64_t>(paragraphs.size()), spans);
}

// Returns {global states, long states} of one request.
std::pair<at::Tensor, at::Tensor> RefEtc(const TensorMap& w, const ModelConfig& c,
                                         const EtcInput& in) {
  const int64_t ng = in.global_ids.size(), nl = in.long_ids.size(), n = ng + nl;
  const int64_t k = c.etc.relative_clip, dh = c.head_dim();
  std::vector<int64_t> ids(in.global_ids.begin(), in.global_ids.end());
  ids.insert(ids.end(), in.long_ids.begin(), in.long_ids.end());
  at::Tensor e = W(w, "embeddings.word_embeddings.weight").index_select(0, at::tensor(ids)) +
                 W(w, "embeddings.token_type_embeddings.weight")[0];
  if (c.etc.positions != "none") {  // the values: MakeEtcInput, checked in etc_plan_test
    std::vector<int64_t> positions(in.global_positions.begin(), in.global_positions.end());
    positions.insert(positions.end(), in.long_positions.begin(), in.long_positions.end());
    e += W(w, "embeddings.position_embeddings.weight").index_select(0, at::tensor(positions));
  }
  if (c.exact_match_feature) {
    // Global tokens never match; long tokens add row 1 where flagged.
    const at::Tensor em = W(w, "embeddings.exact_match_embeddings.weight");
    for (int64_t i = 0; i < n; ++i) {
      e[i].add_(em[i >= ng && in.long_match[i - ng] != 0 ? 1 : 0]);
    }
  }
  at::Tensor x = RefLayerNorm(e, W(w, "embeddings.LayerNorm.weight"),
                              W(w, "embeddings.LayerNorm.bias"), c.layer_norm_eps);
  auto is_global = [ng](int64_t i) { return i < ng; };
  auto segment = [&](int64_t i) {
    return is_global(i) ? in.global_segment[i] : in.long_segment[i - ng];
  };
  for (int64_t layer = 0; layer < c.num_layers(); ++layer) {
    if (c.etc.pool_entity_mentions) {  // an entity token's state: the mean of its mentions'
      for (int64_t g = 0; g < ng; ++g) {
        at::Tensor sum = at::zeros({c.hidden_size}, at::kDouble);
        int64_t count = 0;
        for (int64_t l = 0; l < nl; ++l) {
          if (in.long_entity[l] != g) continue;
          sum += x[ng + l];
          ++count;
        }
        if (count > 0) x[g] = sum / double(count);
      }
    }
    const std::string s = "encoder.layer." + std::to_string(layer) + ".attention.self.";
    auto project = [&](const char* name, const char* global_name) {
      const at::Tensor local = RefLinear(w, s + name, x);
      if (c.etc.shared_projections) return local;
      const at::Tensor global = RefLinear(w, s + global_name, x);
      return at::cat({global.narrow(0, 0, ng), local.narrow(0, ng, nl)});
    };
    const at::Tensor q = project("query", "global_query"), key = project("key", "global_key"),
                     v = project("value", "global_value");
    const at::Tensor rel = W(w, s + "relative_key");
    at::Tensor context = at::zeros({n, c.hidden_size}, at::kDouble);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t h = 0; h < c.num_heads; ++h) {
        std::vector<double> scores(n, -INFINITY);
        for (int64_t j = 0; j < n; ++j) {
          int64_t label;
          if (is_global(i) == is_global(j)) {
            if (!is_global(i) && std::abs(j - i) > c.etc.radius) continue;  // l2l radius
            label = std::clamp<int64_t>(j - i, -k, k) + k;
          } else {
            const int64_t g = is_global(i) ? i : j, l = is_global(i) ? j : i;
            const bool entity_link = !in.long_entity.empty() && in.long_entity[l - ng] == g;
            const bool own = (segment(g) >= 0 && segment(g) == segment(l)) || entity_link;
            // The hard mask: a segment token sees its segment's tokens, an entity its mentions.
            const bool entity = std::count(in.long_entity.begin(), in.long_entity.end(), g) > 0;
            if (c.etc.hard_g2l_mask && is_global(i) && (segment(g) >= 0 || entity) && !own) {
              continue;
            }
            label = own ? EtcPartOfLabel(c) : EtcNotPartOfLabel(c);
          }
          const at::Tensor qi = q[i].narrow(0, h * dh, dh);
          const at::Tensor kj = key[j].narrow(0, h * dh, dh) + rel[label].narrow(0, h * dh, dh);
          scores[j] = (qi * kj).sum().item<double>() / std::sqrt(double(dh));
        }
        const double top = *std::max_element(scores.begin(), scores.end());
        double total = 0;
        for (double& e : scores) total += (e = std::exp(e - top));
        for (int64_t j = 0; j < n; ++j) {
          context[i].narrow(0, h * dh, dh).add_(v[j].narrow(0, h * dh, dh) * (scores[j] / total));
        }
      }
    }
    x = RefFinish(w, c, layer, x, context);
  }
  return {x.narrow(0, 0, ng), x.narrow(0, ng, nl)};
}

void ExpectEtcMatchesReference(const ModelConfig& c, const std::vector<EtcInput>& inputs,
                               uint64_t seed, int64_t score_budget = kEtcScoreBudget) {
  ASSERT_TRUE(ValidateModelConfig(c).ok()) << ValidateModelConfig(c).message();
  TensorMap w = SpreadWeights(c, seed);
  for (auto& [name, t] : w) {
    if (name.find("relative_key") != std::string::npos) t = at::randn(t.sizes()) * 0.5;
  }
  const EtcEncoder encoder(c, w, score_budget);
  // Both attention paths: the trainer's (autograd on: gathers and whole score blocks) and the
  // inference path (autograd off: scores biased in place, online softmax over long keys).
  for (const bool inference : {false, true}) {
    SCOPED_TRACE(inference ? "inference path" : "trainable path");
    const at::AutoGradMode grad(!inference);
    const EtcOutput out = encoder.Forward(inputs, at::kCPU);
    for (size_t i = 0; i < inputs.size(); ++i) {
      SCOPED_TRACE("request " + std::to_string(i));
      const auto [ref_global, ref_long] = RefEtc(w, c, inputs[i]);
      const at::Tensor got_global = out.global_states.narrow(
          0, out.global_begin[i], out.global_begin[i + 1] - out.global_begin[i]);
      const at::Tensor got_long =
          out.long_states.narrow(0, out.long_begin[i], out.long_begin[i + 1] - out.long_begin[i]);
      EXPECT_LE((got_global.to(at::kDouble) - ref_global).abs().max().item<double>(), kTolerance);
      EXPECT_LE((got_long.to(at::kDouble) - ref_long).abs().max().item<double>(), kTolerance);
    }
  }
}

TEST(EtcTest, RadiusCoveringTheInputIsFullAttentionWithRelativeLabels) {
  const ModelConfig c = EtcConfig(2, 64, 3, true, false);
  ExpectEtcMatchesReference(c, {RandomEtcInput(c, 4, {6, 9, 3}, 1)}, 21);
}

TEST(EtcTest, BlockedLocalAttentionMatchesThePairwiseRadius) {
  // r = 2: blocks of 3; 23 long tokens (not a multiple of 3); one-token paragraphs.
  const ModelConfig c = EtcConfig(2, 2, 2, true, false);
  ExpectEtcMatchesReference(c, {RandomEtcInput(c, 3, {5, 0, 0, 12, 2}, 2)}, 22);
}

TEST(EtcTest, HardGlobalToLongMaskAndSeparateProjections) {
  const ModelConfig c = EtcConfig(2, 3, 4, false, true);
  ExpectEtcMatchesReference(c, {RandomEtcInput(c, 5, {7, 11, 4, 8}, 3)}, 23);
}

TEST(EtcTest, SingleParagraphAndMixedBatch) {
  const ModelConfig c = EtcConfig(3, 4, 3, true, true);
  ExpectEtcMatchesReference(c,
                            {RandomEtcInput(c, 2, {30}, 4), RandomEtcInput(c, 7, {1, 3}, 5),
                             RandomEtcInput(c, 1, {10, 10, 10, 10, 10}, 6)},
                            24);
}

TEST(EtcTest, ChunkedAttentionMatchesTheReference) {
  // A budget of one score element: every chunk is a single global row or a single l2l block (on
  // the inference path: a single long key of the global queries' online softmax).
  for (bool hard_mask : {false, true}) {
    SCOPED_TRACE(hard_mask ? "hard g2l mask" : "no mask");
    const ModelConfig c = EtcConfig(2, 2, 3, !hard_mask, hard_mask);
    ExpectEtcMatchesReference(
        c, {RandomEtcInput(c, 3, {4, 9, 0, 6, 3}, 11), RandomEtcInput(c, 2, {17}, 12)}, 26, 1);
    // Chunks of a few rows and blocks, not dividing the inputs evenly.
    ExpectEtcMatchesReference(c, {RandomEtcInput(c, 5, {8, 2, 12, 7}, 13)}, 27, 700);
  }
}

TEST(EtcTest, HeadsOfSixteenFeaturesTakeTheFusedAttention) {
  // dh 16: on CPUs with the AVX-512 paths the inference path's global and long queries run the
  // fused kernels (fused_etc_attention_test checks them alone); the trainable path never does
  // (the other tests' heads of 8 features take the AVX2 form of those kernels on x86). Both
  // against the pairwise reference, with blocks at the document's ends, padding rows, own ranges
  // and the hard mask.
  for (bool hard_mask : {false, true}) {
    SCOPED_TRACE(hard_mask ? "hard g2l mask" : "no hard mask");
    ModelConfig c = EtcConfig(2, 5, 3, !hard_mask, hard_mask);
    c.hidden_size = 32;
    ExpectEtcMatchesReference(c, {RandomEtcInput(c, 3, {20, 7, 0, 31, 5}, 15)}, 30);
  }
}

TEST(EtcTest, EntityTokensArePartOfTheirMentions) {
  // ETC's WikiHop links (etc.entity_globals): a mention's pairs with its entity token take the
  // "part of" label both ways, on both paths and every form: heads of 8 features (the AVX2 fused
  // kernels on x86) and 16 (the AVX-512 ones), with and without the hard mask (an entity token
  // then sees only its mentions among the long tokens), the trainable path also in chunks of one
  // score element and of a few rows; LibTorch's inference form against the fused kernels in
  // FusedCpuAttentionMatchesLibTorchsInferenceForm.
  for (const bool hard_mask : {false, true}) {
    SCOPED_TRACE(hard_mask ? "hard g2l mask" : "no mask");
    ModelConfig c = EtcConfig(2, 3, 3, !hard_mask, hard_mask);
    c.etc.entity_globals = 4;
    const std::vector<EtcInput> inputs = {EntityEtcInput(c, 3, {9, 2, 12, 7, 0, 8}, 41),
                                          EntityEtcInput(c, 2, {20, 6, 5}, 42)};
    // Entities 110 and 112 (2 paragraphs or more), not 115 (one).
    ASSERT_EQ(inputs[0].global_ids.size(), 1u + 3 + 6 + 2);
    EXPECT_EQ(inputs[0].global_ids[10], 110);
    EXPECT_EQ(inputs[0].global_ids[11], 112);
    ASSERT_EQ(inputs[1].global_ids.size(), 1u + 2 + 3 + 1);  // 112 in one paragraph only
    ExpectEtcMatchesReference(c, inputs, 43);
    ExpectEtcMatchesReference(c, inputs, 44, 1);
    ExpectEtcMatchesReference(c, inputs, 45, 700);
    c.hidden_size = 32;
    ExpectEtcMatchesReference(c, inputs, 46);
  }
}

TEST(EtcTest, PooledEntityTokensHoldTheMeanOfTheirMentions) {
  // etc.pool_entity_mentions: before every layer each entity token's state is the mean of its
  // mentions' states (the reference sets it so), on both paths, in a batch of two requests whose
  // entity rows sit at different offsets, with and without the hard mask, heads of 8 and 16.
  for (const bool hard_mask : {false, true}) {
    SCOPED_TRACE(hard_mask ? "hard g2l mask" : "no mask");
    ModelConfig c = EtcConfig(3, 3, 3, true, hard_mask);
    c.etc.entity_globals = 4;
    c.etc.pool_entity_mentions = true;
    const std::vector<EtcInput> inputs = {EntityEtcInput(c, 3, {9, 2, 12, 7, 0, 8}, 47),
                                          EntityEtcInput(c, 2, {20, 6, 5, 4}, 48)};
    ExpectEtcMatchesReference(c, inputs, 49);
    ExpectEtcMatchesReference(c, inputs, 50, 700);
    c.hidden_size = 32;
    ExpectEtcMatchesReference(c, inputs, 51);
  }
}

TEST(EtcTest, FusedCpuAttentionMatchesLibTorchsInferenceForm) {
  // The inference path with the fused kernels against the same path in LibTorch's chunked form,
  // at heads of 64 features: more global rows than a fused call's 64 and more long blocks than
  // its 32 (several calls each), with and without the hard mask. fp32: the two forms within
  // 1e-4. bf16 layers: the fused kernels score in fp32 where LibTorch's form scores and weighs in
  // bf16, so each is compared with the fp32 states: the fused form no further from them
  // than LibTorch's, within 10% (the bf16 Linear layers' rounding dominates both; printed). On
  // CPUs with AVX2 but no AVX-512 the fused form is the AVX2 one, fp32 only; on AVX-512 CPUs the
  // AVX2 form (EtcCpuAttention::kFusedAvx2) is checked in fp32 too.
  const bool avx512 = FusedCpuOpsAvailable();
  if (!avx512 && !Avx2AttentionAvailable()) {
    GTEST_SKIP() << "neither AVX-512 nor AVX2: only LibTorch's form runs here";
  }
  for (const bool hard_mask : {false, true}) {
    SCOPED_TRACE(hard_mask ? "hard mask" : "no hard mask");
    ModelConfig c = EtcConfig(2, 4, 3, !hard_mask, hard_mask);
    c.hidden_size = 128;
    c.intermediate_size = 64;
    c.etc.entity_globals = 2;
    const std::vector<EtcInput> inputs = {
        RandomEtcInput(c, 5, std::vector<int64_t>(70, 11), 33),  // n_g 76, 770 long tokens
        RandomEtcInput(c, 2, {300, 40, 9}, 34),
        EntityEtcInput(c, 3, std::vector<int64_t>(40, 9), 36)};  // 2 entity tokens, n_g 46
    const TensorMap w = SpreadWeights(c, 35);
    const at::AutoGradMode grad(false);
    EtcOutput fused[2], libtorch[2], avx2;  // fp32, bf16; the AVX2 form in fp32
    for (const Precision precision : {Precision::kFp32, Precision::kBf16}) {
      if (precision == Precision::kBf16 && !avx512) continue;
      const int i = precision == Precision::kBf16;
      EtcEncoder encoder(c, w, kEtcScoreBudget, precision);
      fused[i] = encoder.Forward(inputs, at::kCPU);
      if (avx512 && Avx2AttentionAvailable() && precision == Precision::kFp32) {
        encoder.set_cpu_attention(EtcCpuAttention::kFusedAvx2);
        avx2 = encoder.Forward(inputs, at::kCPU);
      }
      encoder.set_cpu_attention(EtcCpuAttention::kLibTorch);
      libtorch[i] = encoder.Forward(inputs, at::kCPU);
    }
    const auto max_diff = [](const at::Tensor& a, const at::Tensor& b) {
      return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
    };
    EXPECT_GT(max_diff(fused[0].long_states, libtorch[0].long_states), 0);  // both forms ran
    EXPECT_LE(max_diff(fused[0].long_states, libtorch[0].long_states), 1e-4);
    EXPECT_LE(max_diff(fused[0].global_states, libtorch[0].global_states), 1e-4);
    if (!avx512) continue;
    if (avx2.long_states.defined()) {
      EXPECT_GT(max_diff(avx2.long_states, fused[0].long_states), 0);  // another form ran
      EXPECT_LE(max_diff(avx2.long_states, libtorch[0].long_states), 1e-4);
      EXPECT_LE(max_diff(avx2.global_states, libtorch[0].global_states), 1e-4);
    }
    const at::Tensor fp32_long = libtorch[0].long_states, fp32_global = libtorch[0].global_states;
    const double fused_long = max_diff(fused[1].long_states, fp32_long);
    const double libtorch_long = max_diff(libtorch[1].long_states, fp32_long);
    const double fused_global = max_diff(fused[1].global_states, fp32_global);
    const double libtorch_global = max_diff(libtorch[1].global_states, fp32_global);
    std::printf(
        "bf16 against fp32, max |difference|: long %.3g fused, %.3g LibTorch; global %.3g "
        "fused, %.3g LibTorch\n",
        fused_long, libtorch_long, fused_global, libtorch_global);
    EXPECT_LE(fused_long, 1.1 * libtorch_long);
    EXPECT_LE(fused_global, 1.1 * libtorch_global);
  }
}

TEST(EtcTest, InferenceRowBlocksMatchTheTrainablePath) {
  // Requests longer than a row block (kInferenceChunkRows): the inference path projects q, k and
  // v a block of rows at a time and writes each layer's output over its input block by block;
  // the trainable path (checked against the reference above on small inputs) does neither. Too
  // long for the pairwise reference; fp32 on both sides, tolerance 1e-4.
  for (bool shared : {true, false}) {
    SCOPED_TRACE(shared ? "shared projections" : "separate global projections");
    const ModelConfig c = EtcConfig(2, 4, 3, shared, !shared);
    const std::vector<EtcInput> inputs = {
        RandomEtcInput(c, 6, std::vector<int64_t>(40, 50), 31),  // 2,040 long tokens
        RandomEtcInput(c, 3, {900, 700, 150}, 32)};              // 1,753
    ASSERT_GT(static_cast<int64_t>(inputs[0].long_ids.size()), kInferenceChunkRows);
    ASSERT_GT(static_cast<int64_t>(inputs[1].long_ids.size()), kInferenceChunkRows);
    const TensorMap w = SpreadWeights(c, 29);
    const EtcEncoder encoder(c, w);
    EtcOutput trainable, inference;
    {
      const at::AutoGradMode grad(true);
      trainable = encoder.Forward(inputs, at::kCPU);
    }
    {
      const at::AutoGradMode grad(false);
      inference = encoder.Forward(inputs, at::kCPU);
    }
    EXPECT_LE((inference.long_states - trainable.long_states).abs().max().item<double>(), 1e-4);
    EXPECT_LE((inference.global_states - trainable.global_states).abs().max().item<double>(), 1e-4);
  }
}

TEST(EtcTest, RecomputedLayersGiveTheKeptGraphsGradients) {
  // Training with recompute_layers: the same states and the same gradient for every weight as
  // with every layer's graph kept (the same LibTorch ops run again; fp32, tolerance 1e-5
  // relative to the largest gradient of each weight), over a batch of two requests with merged
  // segments (more paragraphs than etc.max_segments).
  ModelConfig c = EtcConfig(3, 4, 3, false, true);
  c.etc.max_segments = 3;
  const std::vector<EtcInput> inputs = {RandomEtcInput(c, 4, {9, 3, 12, 5, 7}, 41),
                                        RandomEtcInput(c, 2, {20, 6}, 42)};
  const TensorMap w = SpreadWeights(c, 43);
  for (const auto& [name, tensor] : w) tensor.requires_grad_(true);
  EtcEncoder encoder(c, w);
  auto run = [&](bool recompute) {
    encoder.set_recompute_layers(recompute);
    for (const auto& [name, tensor] : w) tensor.mutable_grad() = at::Tensor();
    const at::AutoGradMode grad(true);
    const EtcOutput out = encoder.Forward(inputs, at::kCPU);
    const at::Tensor mix_l = at::sin(at::arange(out.long_states.numel()).view_as(out.long_states));
    const at::Tensor mix_g =
        at::cos(at::arange(out.global_states.numel()).view_as(out.global_states));
    ((out.long_states * mix_l).sum() + (out.global_states * mix_g).sum()).backward();
    std::map<std::string, at::Tensor> grads = {{"long states", out.long_states.detach()},
                                               {"global states", out.global_states.detach()}};
    for (const auto& [name, tensor] : w) {
      if (tensor.grad().defined()) grads[name] = tensor.grad().clone();
    }
    return grads;
  };
  const auto kept = run(false), recomputed = run(true);
  ASSERT_GT(kept.size(), 10u);  // states and the weights of three layers and the embeddings
  ASSERT_EQ(kept.size(), recomputed.size());
  for (const auto& [name, expected] : kept) {
    SCOPED_TRACE(name);
    ASSERT_EQ(recomputed.count(name), 1u);
    const double scale = std::max(1.0, expected.abs().max().item<double>());
    EXPECT_LE((recomputed.at(name) - expected).abs().max().item<double>(), 1e-5 * scale);
  }
}

// int8 (each layer's output and FFN through Int8Linear, a grid for each activation row): a
// request's states are the same alone as after a larger request, with more long rows together
// than a row block (Finish runs in row blocks), and near fp32's (a sanity bound on what two
// quantised layers cost here; printed). fp32 first, to show the comparison itself is sound.
TEST(EtcTest, Int8StatesAreNearFp32AndDoNotDependOnTheBatch) {
  if (!Int8LinearAvailable()) GTEST_FAIL() << "no oneDNN quantized engine in this LibTorch";
  const ModelConfig c = EtcConfig(2, 4, 3, true, false);
  const TensorMap w = SpreadWeights(c, 29);
  const EtcInput a = RandomEtcInput(c, 3, {300, 200}, 41), b = RandomEtcInput(c, 5, {900, 700}, 42);
  ASSERT_GT(static_cast<int64_t>(a.long_ids.size() + b.long_ids.size()), kInferenceChunkRows);
  const at::AutoGradMode grad(false);
  at::Tensor fp32_long;
  for (const Precision precision : {Precision::kFp32, Precision::kInt8}) {
    const EtcEncoder encoder(c, w, kEtcScoreBudget, precision);
    const EtcOutput solo = encoder.Forward({a}, at::kCPU);
    const EtcOutput batched = encoder.Forward({b, a}, at::kCPU);
    const at::Tensor long_states = batched.long_states.narrow(
        0, batched.long_begin[1], batched.long_begin[2] - batched.long_begin[1]);
    const at::Tensor global_states = batched.global_states.narrow(
        0, batched.global_begin[1], batched.global_begin[2] - batched.global_begin[1]);
    const double long_diff = (solo.long_states - long_states).abs().max().item<double>();
    const double global_diff = (solo.global_states - global_states).abs().max().item<double>();
    std::printf("%s: a request alone against in a batch: max |difference| %.3g long, %.3g global\n",
                PrecisionName(precision), long_diff, global_diff);
    EXPECT_LE(long_diff, 1e-5 * solo.long_states.abs().max().item<double>());
    EXPECT_LE(global_diff, 1e-5 * solo.global_states.abs().max().item<double>());
    if (precision == Precision::kFp32) {
      fp32_long = solo.long_states;
      continue;
    }
    const double diff = (solo.long_states - fp32_long).abs().max().item<double>();
    const double cosine =
        at::cosine_similarity(solo.long_states, fp32_long, 1).min().item<double>();
    std::printf("int8 against fp32: max |difference| %.3g (states up to %.3g), min cosine %.5f\n",
                diff, fp32_long.abs().max().item<double>(), cosine);
    EXPECT_GT(diff, 0);  // it did run in int8
    EXPECT_GE(cosine, 0.99);
  }
}

// int8 layers with heads of 16 features: on AVX-512 CPUs the fused kernels get the heads in bf16
// (dot products, TransformerLayer::bf16_attention_products). The states stay near fp32's and
// near those of the same int8 encoder with fp32 heads (LibTorch's form) within 5% of the largest
// state, and differ from them (the bf16 heads ran; distances printed).
TEST(EtcTest, Int8LayersHandTheFusedKernelsBf16Heads) {
  if (!Int8LinearAvailable()) GTEST_FAIL() << "no oneDNN quantized engine in this LibTorch";
  if (!FusedEtcAttentionTakesBf16Heads(16)) GTEST_SKIP() << "no AVX-512: fp32 heads here";
  ModelConfig c = EtcConfig(2, 4, 3, true, false);
  c.hidden_size = 32;
  const TensorMap w = SpreadWeights(c, 31);
  const std::vector<EtcInput> inputs = {RandomEtcInput(c, 3, {300, 200, 17}, 43)};
  const at::AutoGradMode grad(false);
  const at::Tensor fp32 = EtcEncoder(c, w, kEtcScoreBudget).Forward(inputs, at::kCPU).long_states;
  EtcEncoder encoder(c, w, kEtcScoreBudget, Precision::kInt8);
  const at::Tensor bf16_heads = encoder.Forward(inputs, at::kCPU).long_states;
  encoder.set_cpu_attention(EtcCpuAttention::kLibTorch);
  const at::Tensor fp32_heads = encoder.Forward(inputs, at::kCPU).long_states;
  const auto max_diff = [](const at::Tensor& a, const at::Tensor& b) {
    return (a - b).abs().max().item<double>();
  };
  const double heads = max_diff(bf16_heads, fp32_heads), bf16_off = max_diff(bf16_heads, fp32),
               fp32_off = max_diff(fp32_heads, fp32);
  std::printf("int8, bf16 heads against fp32 heads %.3g; against fp32 %.3g (fp32 heads: %.3g)\n",
              heads, bf16_off, fp32_off);
  EXPECT_GT(heads, 0);
  EXPECT_LE(heads, 0.05 * fp32.abs().max().item<double>());
  EXPECT_GE(at::cosine_similarity(bf16_heads, fp32, 1).min().item<double>(), 0.99);
}

TEST(EtcTest, MergedSegmentsMatchTheReference) {
  // Seven paragraphs, at most three segment tokens: paragraphs share segments, and "part of"
  // (and the hard mask) follow the segment.
  for (bool hard_mask : {false, true}) {
    ModelConfig c = EtcConfig(2, 3, 3, true, hard_mask);
    c.etc.max_segments = 3;
    const EtcInput in = RandomEtcInput(c, 4, {5, 2, 7, 1, 9, 3, 6}, 14);
    ASSERT_EQ(in.global_ids.size(), 1u + 4u + 3u);
    ExpectEtcMatchesReference(c, {in}, 28);
  }
}

TEST(EtcTest, ParagraphPositionsAddTheirEmbeddings) {
  ModelConfig c = EtcConfig(2, 3, 3, true, false);
  c.etc.positions = "paragraph";
  c.position_offset = 2;
  c.max_question_tokens = 8;
  c.max_position_embeddings = 12;  // paragraphs longer than 10 tokens clip at the last row
  const EtcInput in = RandomEtcInput(c, 3, {4, 14, 2}, 15);
  ASSERT_EQ(in.long_positions.size(), in.long_ids.size());
  ExpectEtcMatchesReference(c, {in, RandomEtcInput(c, 1, {6}, 16)}, 29);
  c.etc.positions = "document";  // 20 long tokens: the numbering wraps past row 11
  ExpectEtcMatchesReference(c, {RandomEtcInput(c, 3, {4, 14, 2}, 15)}, 31);
}

TEST(EtcTest, ExactMatchFeatureAddsItsEmbeddingToMatchingLongTokens) {
  ModelConfig c = EtcConfig(2, 4, 3, true, false);
  c.exact_match_feature = true;
  const EtcInput in = RandomEtcInput(c, 12, {9, 14, 6}, 7);
  ASSERT_EQ(in.long_match.size(), in.long_ids.size());
  const int64_t matches = std::count(in.long_match.begin(), in.long_match.end(), 1);
  ASSERT_GT(matches, 0);  // 12 question pieces over 100 ids: some document tokens match
  ASSERT_LT(matches, static_cast<int64_t>(in.long_ids.size()));
  ExpectEtcMatchesReference(c, {in, RandomEtcInput(c, 3, {20}, 8)}, 25);
}

TEST(EtcTest, EngineAnswersWithAnEtcModelAndBatchesInvariantly) {
  const ModelConfig c = EtcConfig(2, 4, 3, false, false);
  auto engine =
      Engine::Create(c, SpreadWeights(c, 9), testing_support::TestTokenizer(), {2, "cpu"});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  std::vector<PreparedRequest> prepared;
  for (int i = 0; i < 3; ++i) {
    QaRequest r;
    r.question = i == 1 ? "where was Ada born" : "which city";
    r.text = std::string("Ada was born in Paris.\n\nthe river of the city") +
             (i == 2 ? "\n\nthe mountain of France is long" : "");
    auto p = (*engine)->Prepare(r);
    ASSERT_TRUE(p.ok());
    prepared.push_back(std::move(*p));
  }
  const auto together = (*engine)->Run({&prepared[0], &prepared[1], &prepared[2]});
  for (size_t i = 0; i < prepared.size(); ++i) {
    const auto alone = (*engine)->Run({&prepared[i]});
    ASSERT_TRUE(alone[0].ok() && together[i].ok());
    EXPECT_EQ(alone[0]->type, together[i]->type);
    EXPECT_NEAR(alone[0]->no_answer_score, together[i]->no_answer_score, 1e-4);
    EXPECT_NEAR(alone[0]->long_answer.score, together[i]->long_answer.score, 1e-4);
    EXPECT_EQ(alone[0]->windows, 1);
  }
}

TEST(EtcTest, EngineRunStopsBetweenLayersWhenNobodyWaits) {
  const ModelConfig c = EtcConfig(3, 4, 3, true, false);
  auto engine =
      Engine::Create(c, SpreadWeights(c, 10), testing_support::TestTokenizer(), {2, "cpu"});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  QaRequest r;
  r.question = "where was Ada born";
  r.text = "Ada was born in Paris.\n\nthe river of the city";
  auto p = (*engine)->Prepare(r);
  ASSERT_TRUE(p.ok());
  // Asked before every layer (and every chunk of long queries): the second check says stop.
  int checks = 0;
  const auto stopped = (*engine)->Run({&*p, &*p}, nullptr, [&] { return ++checks >= 2; });
  EXPECT_EQ(checks, 2);
  for (const auto& answer : stopped)
    EXPECT_EQ(answer.status().code(), absl::StatusCode::kCancelled);
  // A check that never says stop changes nothing.
  checks = 0;
  const auto full = (*engine)->Run({&*p}, nullptr, [&] { return ++checks < 0; });
  ASSERT_TRUE(full[0].ok());
  EXPECT_GE(checks, 3);
}

}  // namespace
}  // namespace longqa
