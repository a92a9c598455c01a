// Model weights by name: the expected name → shape table for a config (RoBERTa/BERT names, so
// converted Hugging Face checkpoints load unchanged), loading with validation, and the random
// model factory used by tests and benchmarks.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/format/config.h"

namespace longqa {

using TensorMap = std::map<std::string, at::Tensor>;

// Names of the answer heads.
inline constexpr char kQaOutputs[] = "qa_outputs";    // [2, d]: short start, end
inline constexpr char kLongAnswer[] = "long_answer";  // [1, d]: paragraph score
inline constexpr char kAnswerType[] = "answer_type";  // [5, d]: null, yes, no, short, long
inline constexpr int64_t kNumAnswerTypes = 5;
// [1, d]: a segment token's supporting-fact score (ETC with etc.supporting_fact_head; training
// only)
inline constexpr char kSupportingFact[] = "supporting_fact";
inline constexpr char kExactMatchEmbeddings[] =
    "embeddings.exact_match_embeddings.weight";  // [2, d]

// Per-layer tensors of the clustering attention layers (under LayerScope(i)).
inline constexpr char kClusterProjection[] =
    ".attention.cluster_projection.weight";                      // N: W^C [d, d]
inline constexpr char kHashPlanes[] = ".attention.hash_planes";  // K, I: [bits, head_dim]

std::string LayerScope(int64_t layer);  // "encoder.layer.<i>"

// Every tensor a model of this config needs, with its shape.
std::map<std::string, std::vector<int64_t>> ExpectedShapes(const ModelConfig& config);

// Loads model.safetensors and checks it against the config: every expected tensor present with
// its shape, no unexpected tensor, dtype f32/f16/bf16. Returns f32 CPU tensors.
absl::StatusOr<TensorMap> LoadWeights(const std::string& path, const ModelConfig& config);

// Random weights for any config (BERT-style init: normal(0, 0.02), LayerNorm 1/0, centroids and
// hash planes normal(0, 1)). Deterministic for a seed.
TensorMap RandomWeights(const ModelConfig& config, uint64_t seed);

}  // namespace longqa
