#include "model/format/weights.h"

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/format/safetensors.h"

namespace longqa {

std::string LayerScope(int64_t layer) { return absl::StrCat("encoder.layer.", layer); }

std::map<std::string, std::vector<int64_t>> ExpectedShapes(const ModelConfig& c) {
  const int64_t d = c.hidden_size;
  const bool etc = c.architecture == Architecture::kEtc;
  std::map<std::string, std::vector<int64_t>> shapes = {
      {"embeddings.word_embeddings.weight", {c.vocab_size, d}},
      {"embeddings.token_type_embeddings.weight", {c.type_vocab_size, d}},
      {"embeddings.LayerNorm.weight", {d}},
      {"embeddings.LayerNorm.bias", {d}},
      {absl::StrCat(kQaOutputs, ".weight"), {2, d}},
      {absl::StrCat(kQaOutputs, ".bias"), {2}},
      {absl::StrCat(kLongAnswer, ".weight"), {1, d}},
      {absl::StrCat(kLongAnswer, ".bias"), {1}},
      {absl::StrCat(kAnswerType, ".weight"), {kNumAnswerTypes, d}},
      {absl::StrCat(kAnswerType, ".bias"), {kNumAnswerTypes}},
  };
  // ETC replaces absolute positions with relative labels, unless it keeps absolute ones too.
  if (!etc || c.etc.positions != "none")
    shapes["embeddings.position_embeddings.weight"] = {c.max_position_embeddings, d};
  if (c.exact_match_feature) shapes[kExactMatchEmbeddings] = {2, d};
  if (etc && c.etc.supporting_fact_head) {
    shapes[absl::StrCat(kSupportingFact, ".weight")] = {1, d};
    shapes[absl::StrCat(kSupportingFact, ".bias")] = {1};
  }
  size_t cluster_layer = 0;
  for (int64_t i = 0; i < c.num_layers(); ++i) {
    const std::string s = LayerScope(i);
    for (const char* proj : {"query", "key", "value"}) {
      shapes[absl::StrCat(s, ".attention.self.", proj, ".weight")] = {d, d};
      shapes[absl::StrCat(s, ".attention.self.", proj, ".bias")] = {d};
    }
    shapes[s + ".attention.output.dense.weight"] = {d, d};
    shapes[s + ".attention.output.dense.bias"] = {d};
    shapes[s + ".attention.output.LayerNorm.weight"] = {d};
    shapes[s + ".attention.output.LayerNorm.bias"] = {d};
    shapes[s + ".intermediate.dense.weight"] = {c.intermediate_size, d};
    shapes[s + ".intermediate.dense.bias"] = {c.intermediate_size};
    shapes[s + ".output.dense.weight"] = {d, c.intermediate_size};
    shapes[s + ".output.dense.bias"] = {d};
    shapes[s + ".output.LayerNorm.weight"] = {d};
    shapes[s + ".output.LayerNorm.bias"] = {d};
    if (c.layers[i] == 'C' || c.layers[i] == 'N') {
      shapes[s + ".centroids"] = {c.num_clusters[cluster_layer++], d};
    }
    if (c.layers[i] == 'N') shapes[s + kClusterProjection] = {d, d};
    if (c.layers[i] == 'K' || c.layers[i] == 'I') {
      shapes[s + kHashPlanes] = {c.clustered.bits, c.head_dim()};
    }
    if (etc) {
      shapes[s + ".attention.self.relative_key"] = {EtcNumLabels(c), d};
      if (!c.etc.shared_projections) {
        for (const char* proj : {"global_query", "global_key", "global_value"}) {
          shapes[absl::StrCat(s, ".attention.self.", proj, ".weight")] = {d, d};
          shapes[absl::StrCat(s, ".attention.self.", proj, ".bias")] = {d};
        }
      }
    }
  }
  return shapes;
}

absl::StatusOr<TensorMap> LoadWeights(const std::string& path, const ModelConfig& config) {
  auto file = SafetensorsFile::Open(path);
  if (!file.ok()) return file.status();
  const auto expected = ExpectedShapes(config);
  for (const auto& [name, entry] : (*file)->entries()) {
    if (expected.count(name) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": tensor '", name, "' is not part of a model with this config (layers \"",
          config.layers, "\")"));
    }
  }
  TensorMap weights;
  for (const auto& [name, shape] : expected) {
    const auto it = (*file)->entries().find(name);
    if (it == (*file)->entries().end()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": missing tensor '", name, "'"));
    }
    if (it->second.shape != shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": tensor '", name, "' has shape [", absl::StrJoin(it->second.shape, ", "),
          "] but the config needs [", absl::StrJoin(shape, ", "), "]"));
    }
    auto tensor = (*file)->Read(name);
    if (!tensor.ok()) return tensor.status();
    weights[name] = tensor->to(at::kFloat);
  }
  return weights;
}

TensorMap RandomWeights(const ModelConfig& config, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  TensorMap weights;
  for (const auto& [name, shape] : ExpectedShapes(config)) {
    const bool is_norm = name.find("LayerNorm") != std::string::npos;
    const bool is_bias = name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    at::Tensor t;
    if (is_norm) {
      t = is_bias ? at::zeros(shape) : at::ones(shape);
    } else if (is_bias) {
      t = at::zeros(shape);
    } else {
      const bool unit = name.find("centroids") != std::string::npos ||
                        name.find("hash_planes") != std::string::npos;
      const double std = unit ? 1.0 : 0.02;
      t = at::normal(0.0, std, shape, gen);
    }
    weights[name] = t;
  }
  return weights;
}

}  // namespace longqa
