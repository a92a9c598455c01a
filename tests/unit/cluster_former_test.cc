// The Cluster-Former encoder against an independent plain-LibTorch formulation written here in
// fp64 (per-head loops, explicit softmax, LayerNorm and GELU; windows and chunks run one at a
// time without padding). The model runs in fp32: tolerance 2e-4 absolute on LayerNorm'd states.
#include "model/encoders/cluster_former.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/encoders/exact_match.h"
#include "tests/unit/reference_layers.h"
#include "tests/unit/test_model.h"

namespace longqa {
namespace {

using testing_support::RandomInput;
using testing_support::SpreadWeights;
using testing_support::TinyConfig;

constexpr double kTolerance = 2e-4;

// match: the exact-match flag of every id (read when the config has the feature).
at::Tensor RefEmbed(const TensorMap& w, const ModelConfig& c, const std::vector<int32_t>& ids,
                    const std::vector<int64_t>& match) {
  std::vector<int64_t> i64(ids.begin(), ids.end()), pos(ids.size());
  std::iota(pos.begin(), pos.end(), c.position_offset);
  at::Tensor e = W(w, "embeddings.word_embeddings.weight").index_select(0, at::tensor(i64)) +
                 W(w, "embeddings.position_embeddings.weight").index_select(0, at::tensor(pos)) +
                 W(w, "embeddings.token_type_embeddings.weight")[0];
  if (c.exact_match_feature) {
    const at::Tensor em = W(w, "embeddings.exact_match_embeddings.weight");
    for (size_t i = 0; i < ids.size(); ++i) e[i].add_(em[match[i] != 0 ? 1 : 0]);
  }
  return RefLayerNorm(e, W(w, "embeddings.LayerNorm.weight"), W(w, "embeddings.LayerNorm.bias"),
                      c.layer_norm_eps);
}

struct RefState {
  std::vector<at::Tensor> question;  // per window [q, d]
  at::Tensor context;                // [x, d]
};

// The table header window k reads (ModelConfig::table_header_tokens): [begin, end) of the
// context, empty unless the window starts inside a table below its header.
std::pair<int64_t, int64_t> RefHeader(const WindowInput& in, int64_t first) {
  for (const ContextTable& t : in.tables) {
    const bool inside = first >= t.begin && first < t.end;
    if (inside && t.header_end <= first) return {t.header_begin, t.header_end};
  }
  return {0, 0};
}

// The paper's model for one request, written directly from eqs. 1-9; a window below a table's
// header reads the header's states between its question and its context, and writes back none.
RefState RefClusterFormer(const TensorMap& w, const ModelConfig& c, const WindowInput& in) {
  const int64_t q = in.question.size(), x = in.context.size();
  const int64_t l = c.window_tokens, m = c.stride_tokens, d = c.hidden_size;
  const int64_t k_count = x <= l ? 1 : 1 + (x - l + m - 1) / m;
  RefState st;
  int64_t cluster_layer = 0;
  for (int64_t layer = 0; layer < c.num_layers(); ++layer) {
    if (c.layers[layer] == 'S') {
      at::Tensor sum = at::zeros({x, d}, at::kDouble), count = at::zeros({x, 1}, at::kDouble);
      std::vector<at::Tensor> questions;
      for (int64_t k = 0; k < k_count; ++k) {
        const int64_t b = k * m, e = std::min(b + l, x);
        const auto [hb, he] = RefHeader(in, b);
        at::Tensor input;
        if (layer == 0) {
          std::vector<int32_t> ids = in.question;
          ids.insert(ids.end(), in.context.begin() + hb, in.context.begin() + he);
          ids.insert(ids.end(), in.context.begin() + b, in.context.begin() + e);
          std::vector<int64_t> match(q, 0);  // question tokens never match
          for (int64_t j = hb; j < he; ++j) {
            match.push_back(in.context_match.empty() ? 0 : in.context_match[j]);
          }
          for (int64_t j = b; j < e; ++j) {
            match.push_back(in.context_match.empty() ? 0 : in.context_match[j]);
          }
          input = RefEmbed(w, c, ids, match);
        } else {
          input = at::cat(
              {st.question[k], st.context.narrow(0, hb, he - hb), st.context.narrow(0, b, e - b)});
        }
        const at::Tensor out = RefLayer(w, c, layer, input);
        questions.push_back(out.narrow(0, 0, q));
        sum.narrow(0, b, e - b).add_(out.narrow(0, q + (he - hb), e - b));
        count.narrow(0, b, e - b).add_(1.0);
      }
      st.question = questions;
      st.context = sum / count;
      continue;
    }
    // Cluster layer: H̄ in window order, argmax cosine, stable sort, chunks of m, scatter back.
    std::vector<at::Tensor> rows;
    for (int64_t k = 0; k < k_count; ++k) {
      const int64_t b = k * m, e = k + 1 == k_count ? x : b + m;
      rows.push_back(st.question[k]);
      rows.push_back(st.context.narrow(0, b, e - b));
    }
    const at::Tensor hbar = at::cat(rows);
    const at::Tensor cent = W(w, "encoder.layer." + std::to_string(layer) + ".centroids");
    const at::Tensor cosine =
        at::matmul(hbar / hbar.norm(2, {1}, true), (cent / cent.norm(2, {1}, true)).t());
    const at::Tensor ids = cosine.argmax(1);
    std::vector<int64_t> order(hbar.size(0));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return ids[a].item<int64_t>() < ids[b].item<int64_t>();
    });
    at::Tensor out = at::empty_like(hbar);
    for (size_t begin = 0; begin < order.size(); begin += m) {
      const size_t end = std::min(order.size(), begin + m);
      const at::Tensor idx =
          at::tensor(std::vector<int64_t>(order.begin() + begin, order.begin() + end));
      out.index_copy_(0, idx, RefLayer(w, c, layer, hbar.index_select(0, idx)));
    }
    int64_t r = 0;
    for (int64_t k = 0; k < k_count; ++k) {
      const int64_t b = k * m, e = k + 1 == k_count ? x : b + m;
      st.question[k] = out.narrow(0, r, q);
      st.context.narrow(0, b, e - b).copy_(out.narrow(0, r + q, e - b));
      r += q + (e - b);
    }
    ++cluster_layer;
  }
  return st;
}

// Runs the encoder on a batch and checks every request's context rows and window CLS rows
// against the reference.
void ExpectMatchesReference(const ModelConfig& c, const std::vector<WindowInput>& inputs,
                            uint64_t seed) {
  ASSERT_TRUE(ValidateModelConfig(c).ok()) << ValidateModelConfig(c).message();
  const TensorMap w = SpreadWeights(c, seed);
  const ClusterFormerEncoder encoder(c, w);
  const WindowPlan plan = PlanWindows(inputs, c.window_tokens, c.stride_tokens, c.special.pad);
  at::InferenceMode guard;
  const at::Tensor hbar = encoder.Forward(plan, at::kCPU).to(at::kDouble);
  for (size_t i = 0; i < inputs.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    const RefState ref = RefClusterFormer(w, c, inputs[i]);
    const at::Tensor rows =
        at::tensor(std::vector<int64_t>(plan.context_rows.begin() + plan.context_begin[i],
                                        plan.context_rows.begin() + plan.context_begin[i + 1]));
    EXPECT_LE((hbar.index_select(0, rows) - ref.context).abs().max().item<double>(), kTolerance);
    for (int64_t k = plan.windows_begin[i]; k < plan.windows_begin[i + 1]; ++k) {
      const at::Tensor got = hbar[plan.cls_rows[k]];
      const at::Tensor want = ref.question[k - plan.windows_begin[i]][0];
      EXPECT_LE((got - want).abs().max().item<double>(), kTolerance) << "window " << k;
    }
  }
}

TEST(ClusterFormerTest, OneWindowEqualsFullAttentionEncoder) {
  // l ≥ x: a single window, i.e. a plain encoder over [CLS q SEP context].
  ExpectMatchesReference(TinyConfig("SSS", 64, 48), {RandomInput(6, 50, 120, 1)}, 11);
}

TEST(ClusterFormerTest, SlidingWindowsAverageOverlaps) {
  // x not a multiple of m, overlaps of 2 and of 3 windows (l > 2m), a one-token context.
  ExpectMatchesReference(TinyConfig("SS", 16, 12), {RandomInput(5, 61, 120, 2)}, 12);
  ExpectMatchesReference(TinyConfig("SSS", 20, 7), {RandomInput(4, 45, 120, 3)}, 13);
  ExpectMatchesReference(TinyConfig("SS", 16, 12), {RandomInput(3, 1, 120, 4)}, 14);
}

TEST(ClusterFormerTest, QuestionLongerThanTheWindow) {
  ExpectMatchesReference(TinyConfig("SS", 8, 6), {RandomInput(30, 27, 120, 5)}, 15);
}

TEST(ClusterFormerTest, OneCentroidIsAttentionOverChunksInOriginalOrder) {
  ExpectMatchesReference(TinyConfig("SCS", 16, 12, 1), {RandomInput(5, 70, 120, 6)}, 16);
}

TEST(ClusterFormerTest, ManyCentroidsSortRowsByCluster) {
  ModelConfig c = TinyConfig("SCSC", 16, 12);
  c.num_clusters = {5, 3};
  ExpectMatchesReference(c, {RandomInput(5, 83, 120, 7)}, 17);
}

TEST(ClusterFormerTest, BatchOfMixedLengthsMatchesEachRequestAlone) {
  // Different q and x per request: windows and chunks of all requests share one batch.
  ExpectMatchesReference(TinyConfig("SCS", 16, 12, 4),
                         {RandomInput(5, 70, 120, 8), RandomInput(9, 3, 120, 9),
                          RandomInput(3, 130, 120, 10), RandomInput(7, 16, 120, 11)},
                         18);
}

TEST(ClusterFormerTest, WindowsBelowATableHeaderReadItsRows) {
  // Windows start at 0, 12, 24, 36, 48, 60 (l 16, m 12, 70 tokens). A table over tokens 10-59
  // with its header at 10-14: the windows at 24, 36 and 48 carry the header (the one at 12 holds
  // it already); a table over 58-69 with its header at 58-60: the window at 60 starts inside
  // the header and carries none.
  ModelConfig c = TinyConfig("SCS", 16, 12, 2);
  c.exact_match_feature = true;
  WindowInput in = RandomInput(5, 70, 120, 29);
  in.context_match.assign(70, 0);
  for (int64_t j = 10; j < 70; j += 3) in.context_match[j] = 1;
  in.tables = {{10, 58, 10, 15}, {58, 70, 58, 61}};
  const WindowPlan plan = PlanWindows({in}, 16, 12, c.special.pad);
  EXPECT_EQ(plan.window_header_tokens, (std::vector<int64_t>{0, 0, 5, 5, 5, 0}));
  EXPECT_EQ(plan.window_len, 5 + 5 + 16);
  // The header copies are read (their rows), never merged: a header token's row averages the
  // copies of the windows that hold it as context only.
  const int64_t t_len = plan.window_len;
  for (int64_t t = 5; t < 10; ++t) {
    const int64_t slot = 2 * t_len + t;
    EXPECT_EQ(plan.slot_tokens[slot], in.context[10 + t - 5]);
    EXPECT_EQ(plan.slot_positions[slot], t);
    EXPECT_EQ(plan.window_index[slot], plan.context_rows[10 + t - 5]);
  }
  for (int64_t r = 0; r < plan.num_rows; ++r) {
    for (int64_t s = plan.merge_offsets[r]; s < plan.merge_offsets[r + 1]; ++s) {
      const int64_t window = plan.merge_sources[s] / t_len, t = plan.merge_sources[s] % t_len;
      EXPECT_FALSE(t >= 5 && t < 5 + plan.window_header_tokens[window]) << "row " << r;
    }
  }
  ExpectMatchesReference(c, {in}, 23);
  // Without the tables the same request computes what it did before (no header anywhere).
  in.tables.clear();
  EXPECT_EQ(PlanWindows({in}, 16, 12, c.special.pad).window_len, 5 + 16);
  ExpectMatchesReference(c, {in}, 23);
}

TEST(ClusterFormerTest, ExactMatchFeatureAddsItsEmbeddingToMatchingContextTokens) {
  ModelConfig c = TinyConfig("SCS", 16, 12, 3);
  c.exact_match_feature = true;
  std::vector<WindowInput> inputs = {RandomInput(14, 70, 40, 12), RandomInput(5, 20, 40, 13)};
  for (WindowInput& in : inputs) {
    const std::vector<int32_t> pieces(in.question.begin() + 1, in.question.end() - 1);
    in.context_match = ExactMatchFlags(pieces, in.context);
  }
  const auto& flags = inputs[0].context_match;
  ASSERT_GT(std::count(flags.begin(), flags.end(), 1), 0);  // ids 5..39: many repeats
  ASSERT_GT(std::count(flags.begin(), flags.end(), 0), 0);
  ExpectMatchesReference(c, inputs, 19);
}

// The encoder has two paths through each layer: frozen weights under InferenceMode take the fused
// inference one (Q, K, V in one GEMM, scale inside the score GEMM, in-place activations; what the
// tests above check), trainable weights the autograd one. Both must compute the same function,
// padding included (requests of different lengths in one batch).
TEST(ClusterFormerTest, TrainingPathComputesWhatTheInferencePathDoes) {
  const ModelConfig c = TinyConfig("SCS", 16, 12, 4);
  const TensorMap frozen = SpreadWeights(c, 20);
  TensorMap trainable;
  for (const auto& [name, t] : frozen) trainable[name] = t.clone().requires_grad_(true);
  const WindowPlan plan = PlanWindows({RandomInput(5, 70, 120, 21), RandomInput(9, 3, 120, 22)},
                                      c.window_tokens, c.stride_tokens, c.special.pad);
  const at::Tensor trained = ClusterFormerEncoder(c, trainable).Forward(plan, at::kCPU);
  ASSERT_TRUE(trained.requires_grad());  // it did take the autograd path
  at::InferenceMode guard;
  const at::Tensor inferred = ClusterFormerEncoder(c, frozen).Forward(plan, at::kCPU);
  EXPECT_LE((trained.detach() - inferred).abs().max().item<double>(), 1e-5);
}

// A long document: the inference path then runs each layer in blocks of whole windows and its
// Finish in blocks of rows (kInferenceChunkRows, to keep GEMM outputs in cache); the blocks must
// join into the same function as the autograd path's single pass.
TEST(ClusterFormerTest, InferencePathInRowBlocksComputesWhatOnePassDoes) {
  // S: Forward in blocks of windows; C: Forward over sorted chunks; K: Finish in row blocks.
  const ModelConfig c = TinyConfig("SCK", 16, 12, 4);
  const TensorMap frozen = SpreadWeights(c, 26);
  TensorMap trainable;
  for (const auto& [name, t] : frozen) trainable[name] = t.clone().requires_grad_(true);
  const WindowPlan plan = PlanWindows({RandomInput(5, 2000, 120, 27), RandomInput(9, 40, 120, 28)},
                                      c.window_tokens, c.stride_tokens, c.special.pad);
  ASSERT_GT(plan.num_windows * plan.window_len, 2 * kInferenceChunkRows);  // S layers: 3+ blocks
  ASSERT_GT(plan.num_rows, kInferenceChunkRows);                           // K layer's Finish
  const at::Tensor trained = ClusterFormerEncoder(c, trainable).Forward(plan, at::kCPU);
  at::InferenceMode guard;
  const at::Tensor inferred = ClusterFormerEncoder(c, frozen).Forward(plan, at::kCPU);
  EXPECT_LE((trained.detach() - inferred).abs().max().item<double>(), 1e-5);
}

// In int8, a layer that projects q, k, v apart (ETC's, the N, K, I layers: separate_qkv) gets int8
// layers for them: near fp32's, not equal. The S and C layers (the stacked projection) keep fp32
// rows of the stacked matrix instead of carrying three more int8 copies: exactly fp32's.
TEST(ClusterFormerTest, Int8QkvApartOnlyWhereTheLayerProjectsThemApart) {
  const ModelConfig c = ClusterFormerConfig(/*vocab_size=*/120, /*hidden_size=*/64, /*num_heads=*/4,
                                            /*intermediate_size=*/256, "S", /*window=*/48,
                                            /*stride=*/40, /*clusters_per_layer=*/4,
                                            /*max_question_tokens=*/40);
  const TensorMap w = RandomWeights(c, 43);
  const TransformerLayer fp32(w, "encoder.layer.0", c);
  const TransformerLayer stacked(w, "encoder.layer.0", c, Precision::kInt8);
  const TransformerLayer apart(w, "encoder.layer.0", c, Precision::kInt8, /*separate_qkv=*/true);
  at::manual_seed(44);
  const at::Tensor x = at::randn({30, 64});
  at::NoGradGuard no_grad;
  for (int part = 0; part < 3; ++part) {
    const at::Tensor want = fp32.QueryKeyValuePart(part, x);
    EXPECT_TRUE(at::equal(stacked.QueryKeyValuePart(part, x), want)) << "part " << part;
    const double diff = (apart.QueryKeyValuePart(part, x) - want).abs().max().item<double>();
    EXPECT_GT(diff, 0) << "part " << part;
    EXPECT_LE(diff, 0.05 * want.abs().max().item<double>()) << "part " << part;
  }
}

// Precision::kInt8 quantises every layer's dense parts (Int8Linear, tested exactly against its
// definition in int8_linear_test.cc); the encoder's states stay near fp32's. Initialised weights
// (std 0.02, as a checkpoint's are, not the spread ones above: one int8 scale per matrix cannot
// resolve a few outsized entries) and d 64; the bound is what 4 quantised layers cost here,
// measured (printed), with a margin.
TEST(ClusterFormerTest, Int8LayersStayCloseToFp32) {
  const ModelConfig c = ClusterFormerConfig(/*vocab_size=*/120, /*hidden_size=*/64, /*num_heads=*/4,
                                            /*intermediate_size=*/128, "SCSS", 16, 12, 4, 40);
  const TensorMap w = RandomWeights(c, 23);
  const WindowPlan plan = PlanWindows({RandomInput(5, 70, 120, 24), RandomInput(9, 30, 120, 25)},
                                      c.window_tokens, c.stride_tokens, c.special.pad);
  at::InferenceMode guard;
  const at::Tensor fp32 = ClusterFormerEncoder(c, w).Forward(plan, at::kCPU);
  const at::Tensor int8 = ClusterFormerEncoder(c, w, Precision::kInt8).Forward(plan, at::kCPU);
  const double diff = (int8 - fp32).abs().max().item<double>();
  const double cosine = at::cosine_similarity(int8, fp32, 1).min().item<double>();
  std::printf("int8 against fp32: max |difference| %.3g (states up to %.3g), min cosine %.5f\n",
              diff, fp32.abs().max().item<double>(), cosine);
  EXPECT_GT(diff, 0);                                       // it did run in int8
  EXPECT_LE(diff, 0.01 * fp32.abs().max().item<double>());  // measured 0.08%
  EXPECT_GE(cosine, 0.999);
}

// int8 rounds each activation row on its own grid (int8_linear.h) and runs in row blocks like the
// other precisions: a request's states do not depend on what shares its batch or its row blocks.
// The same request alone and after a larger one (more than a row block of rows together, whose
// rows would widen a range shared by the call): equal up to float summation order. fp32 first, to
// show the comparison itself is sound.
TEST(ClusterFormerTest, Int8StatesOfARequestDoNotDependOnItsBatch) {
  const ModelConfig c = ClusterFormerConfig(/*vocab_size=*/120, /*hidden_size=*/64, /*num_heads=*/4,
                                            /*intermediate_size=*/128, "SCSS", 16, 12, 4, 40);
  const TensorMap w = RandomWeights(c, 23);
  const WindowInput a = RandomInput(5, 300, 120, 31), b = RandomInput(5, 1900, 120, 32);
  const WindowPlan alone = PlanWindows({a}, c.window_tokens, c.stride_tokens, c.special.pad);
  const WindowPlan together = PlanWindows({b, a}, c.window_tokens, c.stride_tokens, c.special.pad);
  ASSERT_GT(together.num_rows, kInferenceChunkRows);
  const int64_t begin = together.rows_begin[1], rows = together.rows_begin[2] - begin;
  ASSERT_EQ(rows, alone.num_rows);
  at::InferenceMode guard;
  for (const Precision precision : {Precision::kFp32, Precision::kInt8}) {
    const ClusterFormerEncoder encoder(c, w, precision);
    const at::Tensor solo = encoder.Forward(alone, at::kCPU);
    const at::Tensor batched = encoder.Forward(together, at::kCPU).narrow(0, begin, rows);
    const double diff = (solo - batched).abs().max().item<double>();
    std::printf("%s: a request alone against in a batch: max |difference| %.3g\n",
                PrecisionName(precision), diff);
    EXPECT_LE(diff, 1e-5 * solo.abs().max().item<double>()) << PrecisionName(precision);
  }
}

}  // namespace
}  // namespace longqa
