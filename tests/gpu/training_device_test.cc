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
#include "tests/unit/training_gold.h"
#include "train/adamw.h"
#include "train/qa_loss.h"
#include "train/training_example.h"

namespace longqa {
namespace {

using testing_support::kNullGold;
using testing_support::kShortGold;
using testing_support::kYesGold;
using testing_support::Line;
using testing_support::TestTokenizer;
using testing_support::TinyConfig;

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
  for (const std::string& line :
       {Line("where was Ada born", kShortGold), Line("was Ada born in Paris", kYesGold),
        Line("which mountain", kNullGold)}) {
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
