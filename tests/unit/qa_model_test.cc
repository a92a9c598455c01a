// QaModel's answer-type input for Cluster-Former (both poolings of the window CLS states, and the
// read of the long-answer paragraph) against the encoder's own states pooled here with plain
// tensor ops; squad-format windows against each window run alone.
#include "model/qa_model.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cmath>

#include "tests/unit/test_model.h"

namespace longqa {
namespace {

using testing_support::SpreadWeights;
using testing_support::TinyConfig;

TokenizedDocument Doc(int tokens, int seed) {
  TokenizedDocument doc;
  for (int i = 0; i < tokens; ++i) doc.ids.push_back(5 + (i * 7 + seed * 13) % 100);
  return doc;
}

TEST(QaModelTest, WindowInputsNameEachTableWithItsHeaderCutToTheConfigsLength) {
  ModelConfig config = TinyConfig("SS", 8, 6);
  TokenizedDocument doc = Doc(20, 3);
  // Paragraph 0: tokens 0-4 (prose); paragraph 1: tokens 5-19, a table whose header is 6-10.
  doc.token_paragraph.assign(5, 0);
  doc.token_paragraph.resize(20, 1);
  doc.table_header = {{0, 0}, {6, 11}};
  const std::vector<int32_t> question = {config.special.cls, 9, config.special.sep};
  EXPECT_TRUE(MakeWindowInputs(config, {{&question, &doc}})[0].tables.empty());  // off
  config.table_header_tokens = 3;
  const std::vector<WindowInput> inputs = MakeWindowInputs(config, {{&question, &doc}});
  ASSERT_EQ(inputs[0].tables.size(), 1u);
  const ContextTable& t = inputs[0].tables[0];
  EXPECT_EQ(std::vector<int64_t>({t.begin, t.end, t.header_begin, t.header_end}),
            std::vector<int64_t>({5, 20, 6, 9}));
  // Windows at 0, 6 and 12 (l 8, m 6): the one at 12 starts inside the table below its header
  // and carries it; the one at 6 starts inside the header.
  const WindowPlan plan = PlanWindows(inputs, 8, 6, config.special.pad);
  EXPECT_EQ(plan.window_header_tokens, (std::vector<int64_t>{0, 0, 3}));
}

TEST(QaModelTest, AnswerTypeReadsTheMeanOrTheMaxOfTheWindowClsStates) {
  for (const std::string pooling : {"mean", "max"}) {
    ModelConfig config = TinyConfig("SS", 8, 6);
    config.answer_type_pooling = pooling;
    const TensorMap weights = SpreadWeights(config, 7);
    const QaModel model(config, weights);
    const std::vector<int32_t> question = {config.special.cls, 9, 10, config.special.sep};
    const TokenizedDocument a = Doc(30, 1), b = Doc(5, 2);  // several windows; one window
    const std::vector<QaModelInput> batch = {{&question, &a}, {&question, &b}};
    at::Tensor type;
    {
      at::NoGradGuard no_grad;
      type = model.Forward(batch, at::kCPU).type;
    }
    // Reference: the encoder's states, CLS rows pooled per request, then the type head.
    const WindowPlan plan = PlanWindows(MakeWindowInputs(config, batch), config.window_tokens,
                                        config.stride_tokens, config.special.pad);
    ASSERT_GT(plan.windows_begin[1] - plan.windows_begin[0], 2);
    const ClusterFormerEncoder encoder(config, weights);
    at::NoGradGuard no_grad;
    const at::Tensor hbar = encoder.Forward(plan, at::kCPU, nullptr);
    std::vector<at::Tensor> pooled;
    for (int r = 0; r < 2; ++r) {
      std::vector<int64_t> rows(plan.cls_rows.begin() + plan.windows_begin[r],
                                plan.cls_rows.begin() + plan.windows_begin[r + 1]);
      const at::Tensor cls = hbar.index_select(0, at::tensor(rows, at::kLong));
      pooled.push_back(pooling == "max" ? std::get<0>(cls.max(0)) : cls.mean(0));
    }
    const at::Tensor want = at::linear(at::stack(pooled), weights.at("answer_type.weight"),
                                       weights.at("answer_type.bias"));
    EXPECT_TRUE(at::allclose(type, want, 1e-5, 1e-6)) << pooling << "\n" << type << want;
  }
}

// A document with a paragraph token (special.paragraph) at each of `starts`.
TokenizedDocument DocWithParagraphs(int tokens, int seed, const std::vector<int64_t>& starts,
                                    int32_t paragraph_id) {
  TokenizedDocument doc = Doc(tokens, seed);
  for (const int64_t t : starts) doc.ids[t] = paragraph_id;
  doc.paragraph_token = starts;
  return doc;
}

TEST(QaModelTest, AnswerTypeCanReadTheLongAnswerParagraph) {
  ModelConfig config = TinyConfig("SS", 8, 6);
  config.answer_type_pooling = "paragraph";
  ASSERT_TRUE(ValidateModelConfig(config).ok()) << ValidateModelConfig(config);
  TensorMap weights = SpreadWeights(config, 11);
  for (auto& [name, t] : weights) t.requires_grad_(true);
  const QaModel model(config, weights);
  const std::vector<int32_t> question = {config.special.cls, 9, 10, config.special.sep};
  const int32_t p = config.special.paragraph;
  const TokenizedDocument a = DocWithParagraphs(30, 1, {0, 6, 13, 21}, p);
  const TokenizedDocument b = DocWithParagraphs(5, 2, {0}, p);
  const std::vector<QaModelInput> batch = {{&question, &a}, {&question, &b}};
  const QaLogits logits = model.Forward(batch, at::kCPU);
  // The long-answer head gets no gradient from the type logits (its softmax only says where to
  // read); the encoder and the type head do.
  const std::vector<at::Tensor> grads = torch::autograd::grad(
      {logits.type.sum()}, {weights.at("long_answer.weight"), weights.at("answer_type.weight")},
      /*grad_outputs=*/{}, /*retain_graph=*/false, /*create_graph=*/false,
      /*allow_unused=*/true);
  EXPECT_FALSE(grads[0].defined() && grads[0].abs().sum().item<double>() > 0);
  ASSERT_TRUE(grads[1].defined());
  EXPECT_GT(grads[1].abs().sum().item<double>(), 0);

  // Reference: the encoder's states; per request its paragraph-token rows weighted by the
  // softmax of their long-answer scores, then the type head.
  at::NoGradGuard no_grad;
  const WindowPlan plan = PlanWindows(MakeWindowInputs(config, batch), config.window_tokens,
                                      config.stride_tokens, config.special.pad);
  const ClusterFormerEncoder encoder(config, weights);
  const at::Tensor hbar = encoder.Forward(plan, at::kCPU, nullptr).to(at::kDouble);
  const auto w = [&](const char* name) { return weights.at(name).detach().to(at::kDouble); };
  std::vector<at::Tensor> inputs;
  for (int r = 0; r < 2; ++r) {
    at::Tensor input = at::zeros({config.hidden_size}, at::kDouble);
    const TokenizedDocument& doc = r == 0 ? a : b;
    std::vector<double> scores;
    for (const int64_t t : doc.paragraph_token) {
      const at::Tensor state = hbar[plan.context_rows[plan.context_begin[r] + t]];
      scores.push_back(
          (state.dot(w("long_answer.weight")[0]) + w("long_answer.bias")[0]).item<double>());
    }
    const double top = *std::max_element(scores.begin(), scores.end());
    double total = 0;
    for (double& s : scores) total += (s = std::exp(s - top));
    for (size_t i = 0; i < scores.size(); ++i) {
      const int64_t row = plan.context_rows[plan.context_begin[r] + doc.paragraph_token[i]];
      input = input + hbar[row] * (scores[i] / total);
    }
    inputs.push_back(input);
  }
  const at::Tensor want =
      at::linear(at::stack(inputs), w("answer_type.weight"), w("answer_type.bias"));
  EXPECT_TRUE(at::allclose(logits.type.detach().to(at::kDouble), want, 1e-5, 1e-6))
      << logits.type << want;
}

TEST(QaModelTest, SquadWindowsEachComputeWhatTheWindowAloneComputes) {
  ModelConfig config = TinyConfig("SS", 8, 5);
  config.qa_format = QaFormat::kSquad;
  config.type_vocab_size = 2;
  config.max_position_embeddings += 1;  // the closing SEP
  ASSERT_TRUE(ValidateModelConfig(config).ok()) << ValidateModelConfig(config);
  const TensorMap weights = SpreadWeights(config, 3);
  const QaModel model(config, weights);
  const std::vector<int32_t> question = {config.special.cls, 9, 10, config.special.sep};
  const TokenizedDocument doc = Doc(23, 4);
  at::NoGradGuard no_grad;
  const QaLogits logits = model.Forward({{&question, &doc}}, at::kCPU);
  ASSERT_EQ(logits.windows_begin, (std::vector<int64_t>{0, NumWindows(23, 8, 5)}));
  // Reference: each window's tokens as a request of its own that fits one window (no overlap,
  // so nothing is merged), through the plain Cluster-Former path.
  const ClusterFormerEncoder encoder(config, weights);
  for (int64_t w = 0; w < logits.windows_begin[1]; ++w) {
    const int64_t begin = logits.window_context_begin[w], end = logits.window_context_end[w];
    WindowInput alone{question, {doc.ids.begin() + begin, doc.ids.begin() + end}, {}};
    alone.end_token = config.special.sep;
    alone.context_type = 1;
    const WindowPlan plan = PlanWindows({alone}, 8, 5, config.special.pad);
    ASSERT_EQ(plan.num_windows, 1);
    const at::Tensor states =
        encoder.Forward(plan, at::kCPU).index_select(0, at::tensor(plan.window_index, at::kLong));
    const at::Tensor span =
        at::linear(states, weights.at("qa_outputs.weight"), weights.at("qa_outputs.bias"));
    const int64_t n = plan.window_len;
    EXPECT_TRUE(at::allclose(logits.window_start[w].slice(0, 0, n), span.select(1, 0), 1e-5, 1e-6))
        << w;
    EXPECT_TRUE(at::allclose(logits.window_end[w].slice(0, 0, n), span.select(1, 1), 1e-5, 1e-6))
        << w;
  }
}

}  // namespace
}  // namespace longqa
