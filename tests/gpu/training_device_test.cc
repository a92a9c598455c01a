// Built only in CUDA builds (tests/gpu/run.sh): a training step on the GPU computes the CPU's loss
// and gradients (Cluster-Former and ETC, every autograd wrapper of kernels/ on the way), and the
// optimizer moves the weights the same way on both.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "model/engine.h"
#include "model/qa_model.h"
#include "tests/unit/test_model.h"
#include "train/adamw.h"
#include "train/qa_loss.h"
#include "train/training_example.h"

namespace longqa {
namespace {

using testing_support::TestTokenizer;
using testing_support::TinyConfig;

// Paragraphs joined by "\n\n": [0,17) [19,40) [42,67); gold: a short span, YES, no answer.
std::vector<std::string> GoldLines() {
  const std::string head = R"({"example_id": "x", "kind": "k", "question": ")";
  const std::string paragraphs =
      R"(", "paragraphs": ["the river is long", "Ada was born in Paris", "Paris is a city of France"], )";
  return {
      head + "where was Ada born" + paragraphs +
          R"("long_answer": {"start_byte": 19, "end_byte": 40}, "short_answers": [{"start_byte": 35, "end_byte": 40}]})",
      head + "was Ada born in Paris" + paragraphs +
          R"("long_answer": {"start_byte": 19, "end_byte": 40}, "short_answers": [], "yes_no_answer": "YES"})",
      head + "which mountain" + paragraphs + R"("long_answer": null, "short_answers": []})"};
}

TensorMap Trainable(const TensorMap& weights, const at::Device& device) {
  TensorMap w;
  for (const auto& [name, t] : weights) {
    w[name] = t.to(device).clone();
    if (name.find("centroids") == std::string::npos) w[name].requires_grad_(true);
  }
  return w;
}

void ExpectSameTraining(ModelConfig c) {
  ASSERT_TRUE(at::hasCUDA()) << "this test needs a CUDA device";
  c.exact_match_feature = true;
  const TensorMap initial = RandomWeights(c, 5);
  auto engine = Engine::Create(c, initial, TestTokenizer(), {1, "cpu"});  // tokenizes only
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  std::vector<TrainingExample> examples;
  for (const std::string& line : GoldLines()) {
    auto ex = MakeTrainingExample(line, **engine);
    ASSERT_TRUE(ex.ok()) << ex.status().message();
    examples.push_back(*ex);
  }
  std::vector<const TrainingExample*> batch;
  std::vector<QaModelInput> inputs;
  for (const TrainingExample& ex : examples) {
    batch.push_back(&ex);
    inputs.push_back({&ex.prepared.question_ids, &ex.prepared.document});
  }
  TensorMap cpu = Trainable(initial, at::kCPU), gpu = Trainable(initial, at::kCUDA);
  // Parameters whose gradient is zero in exact arithmetic (the biases of heads scored by a
  // softmax over positions, which is shift-invariant) get rounding noise, and Adam turns noise of
  // any size into steps of ±lr: their updates differ between devices by design, so only their
  // gradients are compared (near zero on both).
  std::set<std::string> noise_only;
  AdamW cpu_adam(cpu, {}), gpu_adam(gpu, {});
  const QaModel cpu_model(c, cpu), gpu_model(c, gpu);
  for (int step = 0; step < 3; ++step) {
    const QaLossResult a = ComputeQaLoss(cpu_model.Forward(inputs, at::kCPU), batch);
    const QaLossResult b = ComputeQaLoss(gpu_model.Forward(inputs, at::kCUDA), batch);
    const double loss = a.total.item<double>();
    EXPECT_NEAR(loss, b.total.item<double>(), 1e-4 * std::max(1.0, loss)) << "step " << step;
    cpu_adam.ZeroGrad();
    gpu_adam.ZeroGrad();
    a.total.backward();
    b.total.backward();
    for (const auto& [name, p] : cpu) {
      if (!p.grad().defined()) continue;
      if (p.grad().abs().max().item<double>() < 1e-6) noise_only.insert(name);
      ASSERT_TRUE(gpu.at(name).grad().defined()) << name;
      // fp32 on both; different summation orders: 1e-3 relative, 1e-5 absolute.
      EXPECT_TRUE(at::allclose(gpu.at(name).grad().cpu(), p.grad(), 1e-3, 1e-5))
          << name << " step " << step << " max diff "
          << (gpu.at(name).grad().cpu() - p.grad()).abs().max().item<double>();
    }
    EXPECT_NEAR(cpu_adam.ClipGradNorm(1.0), gpu_adam.ClipGradNorm(1.0), 1e-3);
    cpu_adam.Step(1e-3);
    gpu_adam.Step(1e-3);
  }
  for (const auto& [name, p] : cpu) {
    if (noise_only.count(name)) continue;
    EXPECT_TRUE(at::allclose(gpu.at(name).detach().cpu(), p.detach(), 1e-3, 1e-5)) << name;
  }
}

TEST(GpuTrainingTest, ClusterFormerStepOnCudaMatchesCpu) {
  ExpectSameTraining(TinyConfig("SCS", 16, 12, 2));
}

TEST(GpuTrainingTest, EtcStepOnCudaMatchesCpu) {
  ExpectSameTraining(testing_support::TinyEtcConfig());
}

}  // namespace
}  // namespace longqa
