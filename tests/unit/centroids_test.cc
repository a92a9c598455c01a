// longqa-centroids' builder on a random model and a small corpus: centroids move to where the
// hidden states are, come out greedily ordered and unit-norm, and are the same for the same seed.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/encoders/cluster_former.h"
#include "model/engine.h"
#include "model/format/safetensors.h"
#include "tests/integration/test_models.h"
#include "tools/centroid_builder.h"
#include "tools/random_model.h"

namespace longqa {
namespace {

namespace fs = std::filesystem;

fs::path Dir() {
  static const fs::path d = [] {
    fs::path p = fs::temp_directory_path() / ("longqa_centroids_" + std::to_string(getpid()));
    fs::create_directories(p);
    return p;
  }();
  return d;
}

std::string Corpus() {
  const std::string path = (Dir() / "corpus.jsonl").string();
  std::ofstream out(path);
  const char* words[] = {"kalo", "mine", "ruso", "tize", "vopo", "anel", "isor", "quabri", "fol"};
  for (int i = 0; i < 24; ++i) {
    std::string doc;
    for (int w = 0; w < 60 + 7 * i; ++w) {
      doc += std::string(w ? (w % 20 == 0 ? "\n\n" : " ") : "") + words[(i * 5 + w * 3) % 9];
    }
    out << nlohmann::json{{"question", std::string(words[i % 9]) + " " + words[(i + 4) % 9]},
                          {"document", doc}}
               .dump()
        << "\n";
  }
  return path;
}

std::string FreshModel(const std::string& name, int64_t clusters = 6) {
  RandomModelSpec spec = testing_support::SmallModelSpec();
  spec.layers = "SCSC";
  spec.clusters = clusters;
  spec.vocab_size = 200;
  const std::string dir = (Dir() / name).string();
  EXPECT_TRUE(WriteRandomModel(spec, dir).ok());
  return dir;
}

// Mean cosine of layer `layer`'s input states to their best centroid, over the corpus.
double MeanBestCosine(const std::string& model_dir, int64_t layer, const std::string& corpus) {
  auto engine = Engine::LoadFromDir(model_dir, {2, "cpu"});
  const auto config = LoadModelConfig(model_dir + "/config.json");
  const auto weights = LoadWeights(model_dir + "/model.safetensors", *config);
  const ClusterFormerEncoder encoder(*config, *weights);
  std::ifstream in(corpus);
  std::string line;
  std::vector<WindowInput> inputs;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    QaRequest r;
    r.question = j["question"];
    r.text = j["document"];
    const auto p = (*engine)->Prepare(r);
    inputs.push_back({p->question_ids, p->document.ids, {}});
  }
  at::InferenceMode guard;
  at::Tensor states;
  encoder.Forward(PlanWindows(inputs, 32, 24, 1), at::kCPU, [&](int64_t l, const at::Tensor& h) {
    if (l != layer) return true;
    states = h;
    return false;
  });
  const at::Tensor c = weights->at(LayerScope(layer) + ".centroids");
  const at::Tensor cos =
      at::matmul(states / states.norm(2, {1}, true), (c / c.norm(2, {1}, true)).t());
  return std::get<0>(cos.max(1)).mean().item<double>();
}

TEST(CentroidBuilderTest, CentroidsFitTheStatesAndAreOrderedAndDeterministic) {
  const std::string corpus = Corpus();
  const std::string a = FreshModel("a"), b = FreshModel("b");
  const double before = MeanBestCosine(a, 1, corpus);
  int64_t progress_calls = 0;
  CentroidOptions options;
  options.memory_rows = 5000;
  options.seed = 3;
  ASSERT_TRUE(BuildCentroids(a, corpus, options, [&](int64_t, int64_t, int64_t) {
                ++progress_calls;
              }).ok());
  ASSERT_TRUE(BuildCentroids(b, corpus, options, nullptr).ok());
  EXPECT_GT(progress_calls, 0);
  const double after = MeanBestCosine(a, 1, corpus);
  EXPECT_GT(after, before + 0.1) << "before " << before << ", after " << after;
  EXPECT_GT(MeanBestCosine(a, 3, corpus), 0.5);

  const auto config = LoadModelConfig(a + "/config.json");
  const auto wa = LoadWeights(a + "/model.safetensors", *config);
  const auto wb = LoadWeights(b + "/model.safetensors", *config);
  ASSERT_TRUE(wa.ok() && wb.ok());
  for (int64_t layer : {1, 3}) {
    const at::Tensor c = wa->at(LayerScope(layer) + ".centroids");
    EXPECT_TRUE(at::equal(c, wb->at(LayerScope(layer) + ".centroids"))) << "same seed, same result";
    EXPECT_TRUE(at::allclose(c.norm(2, {1}), at::ones({6}), 1e-5, 1e-5));
    for (int64_t i = 0; i + 1 < 6; ++i) {  // successor = most similar unused centroid
      const at::Tensor sims = at::matmul(c.narrow(0, i + 1, 6 - i - 1), c[i]);
      EXPECT_FLOAT_EQ(sims[0].item<float>(), sims.max().item<float>());
    }
  }
  // The model still loads and answers.
  auto engine = Engine::LoadFromDir(a, {2, "cpu"});
  ASSERT_TRUE(engine.ok());
  QaRequest r;
  r.question = "kalo";
  r.text = "kalo mine ruso.\n\ntize vopo.";
  EXPECT_TRUE((*engine)->Answer(r).ok());
}

TEST(CentroidBuilderTest, ClearErrors) {
  const std::string model = FreshModel("c", 64);  // more centroids than one example's states
  EXPECT_FALSE(BuildCentroids(model, (Dir() / "missing.jsonl").string(), {}, nullptr).ok());
  const std::string tiny = (Dir() / "tiny.jsonl").string();
  std::ofstream(tiny) << "{\"question\": \"q\", \"document\": \"kalo\"}\n";
  CentroidOptions options;
  const absl::Status too_few = BuildCentroids(model, tiny, options, nullptr);
  EXPECT_FALSE(too_few.ok());
  EXPECT_NE(too_few.message().find("larger corpus"), std::string::npos) << too_few.message();
}

}  // namespace
}  // namespace longqa
