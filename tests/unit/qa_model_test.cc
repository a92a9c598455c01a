// QaModel's answer-type input for Cluster-Former, both poolings of the window CLS states,
// against the encoder's own states pooled here with plain tensor ops.
#include "model/qa_model.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace longqa
