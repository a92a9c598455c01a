#include "tools/centroid_builder.h"

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "model/encoders/cluster_former.h"
#include "model/engine.h"
#include "model/format/model_folder.h"
#include "model/format/safetensors.h"
#include "model/request_json.h"
#include "tools/kmeans.h"

namespace longqa {
namespace {

absl::StatusOr<std::vector<QaRequest>> ReadCorpus(const std::string& path) {
  std::vector<QaRequest> requests;
  LONGQA_RETURN_IF_ERROR(ForEachJsonLine(path, 0, [&](const std::string& line) {
    try {
      requests.push_back(QaRequestFromJson(nlohmann::json::parse(line)));
    } catch (const nlohmann::json::exception& e) {
      return absl::InvalidArgumentError(e.what());
    }
    return absl::OkStatus();
  }));
  return requests;
}

}  // namespace

absl::StatusOr<double> FitCentroids(const ModelConfig& config, TensorMap* weights,
                                    const std::vector<const PreparedRequest*>& requests,
                                    const at::Device& device, const CentroidOptions& options,
                                    const CentroidProgress& progress) {
  if (config.architecture != Architecture::kClusterFormer) {
    return absl::InvalidArgumentError("centroids are for cluster_former models");
  }
  at::InferenceMode guard;
  double cosine = 0;
  int64_t cluster_index = 0;
  for (int64_t layer = 0; layer < config.num_layers(); ++layer) {
    if (config.layers[layer] != 'C') continue;
    // Rebuilt per layer: it reads the earlier cluster layers' centroids as just fitted.
    const ClusterFormerEncoder encoder(config, *weights);
    MemoryBank bank(options.memory_rows);
    const int64_t total = static_cast<int64_t>(requests.size());
    for (int64_t begin = 0; begin < total; begin += options.batch_examples) {
      std::vector<QaModelInput> inputs;
      for (int64_t i = begin; i < std::min(total, begin + options.batch_examples); ++i) {
        inputs.push_back({&requests[i]->question_ids, &requests[i]->document});
      }
      const WindowPlan plan = PlanWindows(MakeWindowInputs(config, inputs), config.window_tokens,
                                          config.stride_tokens, config.special.pad);
      encoder.Forward(plan, device, [&](int64_t at_layer, const at::Tensor& hbar) {
        if (at_layer != layer) return true;
        bank.Add(hbar);
        return false;
      });
      if (progress) progress(layer, std::min(total, begin + options.batch_examples), total);
    }
    const int64_t clusters = config.num_clusters[cluster_index++];
    const at::Tensor rows = bank.Rows();
    if (rows.size(0) < clusters) {
      return absl::InvalidArgumentError(absl::StrCat("layer ", layer, ": the corpus gave ",
                                                     rows.size(0), " hidden states for ", clusters,
                                                     " centroids; use a larger corpus"));
    }
    const KMeansResult result = SphericalKMeans(
        rows, {clusters, options.max_iterations, options.tolerance, options.seed + layer});
    at::Tensor& centroids = weights->at(LayerScope(layer) + ".centroids");
    {
      // Outside inference mode: the tensor may be the trainer's, used again with autograd on.
      c10::InferenceMode off(false);
      centroids.copy_(GreedyNearestNeighbourOrder(result.centroids));
    }
    cosine += result.mean_cosine;
  }
  return cluster_index == 0 ? 0 : cosine / static_cast<double>(cluster_index);
}

absl::Status BuildCentroids(const std::string& model_dir, const std::string& corpus_path,
                            const CentroidOptions& options, const CentroidProgress& progress) {
  LONGQA_ASSIGN_OR_RETURN(ModelConfig config,
                          LoadModelConfig(ModelFilePath(model_dir, kConfigFile)));
  LONGQA_ASSIGN_OR_RETURN(TensorMap weights,
                          LoadWeights(ModelFilePath(model_dir, kWeightsFile), config));
  LONGQA_ASSIGN_OR_RETURN(std::vector<QaRequest> corpus, ReadCorpus(corpus_path));
  // The engine only tokenizes here.
  LONGQA_ASSIGN_OR_RETURN(auto engine, Engine::LoadFromDir(model_dir, {options.threads, "cpu"}));
  std::vector<PreparedRequest> prepared;
  for (QaRequest& r : corpus) {
    LONGQA_ASSIGN_OR_RETURN(PreparedRequest p, engine->Prepare(std::move(r)));
    prepared.push_back(std::move(p));
  }
  std::vector<const PreparedRequest*> requests;
  for (const PreparedRequest& p : prepared) requests.push_back(&p);
  LONGQA_RETURN_IF_ERROR(
      FitCentroids(config, &weights, requests, at::kCPU, options, progress).status());
  return WriteSafetensors(ModelFilePath(model_dir, kWeightsFile), weights);
}

}  // namespace longqa
