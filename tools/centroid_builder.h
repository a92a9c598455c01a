// Fills a Cluster-Former checkpoint's cluster-layer centroids from a corpus (cluster_former_v2
// Algorithm 1, offline): for each cluster layer in order, run the model up to that layer over the
// corpus (earlier cluster layers already using their new centroids), keep the most recent hidden
// states in a memory bank, run spherical K-Means on it, order the centroids greedily, and store
// them. The model folder's model.safetensors is rewritten atomically.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "model/engine.h"
#include "model/format/config.h"
#include "model/format/weights.h"

namespace longqa {

struct CentroidOptions {
  int64_t memory_rows = 100000;  // M: the memory bank's capacity
  int64_t max_iterations = 50;
  double tolerance = 1e-4;
  uint64_t seed = 1;
  int64_t batch_examples = 8;  // corpus examples per encoder pass
  int threads = 0;
};

// progress(layer, examples_done, examples_total) after every batch.
using CentroidProgress = std::function<void(int64_t, int64_t, int64_t)>;

// Fills every cluster layer's centroid tensor in `weights` in place (the tensors keep their
// storage, so a model built on them sees the new centroids), in layer order, from the requests'
// hidden states computed on `device`. Returns the mean cosine of the bank rows to their centroids,
// averaged over the cluster layers.
absl::StatusOr<double> FitCentroids(const ModelConfig& config, TensorMap* weights,
                                    const std::vector<const PreparedRequest*>& requests,
                                    const at::Device& device, const CentroidOptions& options,
                                    const CentroidProgress& progress = nullptr);

// FitCentroids on a model folder, whose model.safetensors it rewrites. corpus: JSONL lines
// {"question": "...", "document": "..."} or {"question", "paragraphs": [...]}.
absl::Status BuildCentroids(const std::string& model_dir, const std::string& corpus_path,
                            const CentroidOptions& options, const CentroidProgress& progress);

}  // namespace longqa
