// The trainer's side of cluster_former_v2 Algorithm 1: every training forward pass adds the
// hidden states entering each cluster layer to that layer's memory bank (the most recent M rows),
// and every N steps the centroids are recomputed from the banks (spherical K-Means, greedy order)
// and written into the model's centroid tensors in place.
#pragma once

#include <cstdint>
#include <map>

#include "model/format/config.h"
#include "model/format/weights.h"
#include "tools/kmeans.h"

namespace longqa {

class ClusterMemory {
 public:
  ClusterMemory(const ModelConfig& config, int64_t capacity);

  // For ClusterFormerEncoder's observer: adds H̄ entering `layer` to that layer's bank.
  void Observe(int64_t layer, const at::Tensor& hbar);
  // Rows in the smallest bank (0 without cluster layers).
  int64_t min_rows() const;
  // Recomputes every cluster layer's centroids from its bank into `weights` (in place).
  // Returns the mean cosine of the rows to their centroids, averaged over layers.
  double Refresh(TensorMap* weights, uint64_t seed) const;

 private:
  ModelConfig config_;
  std::map<int64_t, MemoryBank> banks_;  // by layer index
};

}  // namespace longqa
