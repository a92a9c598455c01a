// The trainer's side of cluster_former_v2 Algorithm 1: every training forward pass adds the
// hidden states entering each cluster layer to that layer's memory bank (the most recent M rows),
// and every N steps the centroids are recomputed from the banks (spherical K-Means, greedy order)
// and written into the model's centroid tensors in place. A pass may add only a random sample of
// its rows: one 16k-token document gives ~19,000 rows, so a bank of whole passes holds only the
// last one or two documents, where a sample spans many.
#pragma once

#include <ATen/core/Generator.h>

#include <cstdint>
#include <map>

#include "model/format/config.h"
#include "model/format/weights.h"
#include "tools/kmeans.h"

namespace longqa {

class ClusterMemory {
 public:
  // rows_per_pass > 0: each Observe keeps at most that many of its rows, drawn at random (seeded);
  // 0 keeps every row.
  ClusterMemory(const ModelConfig& config, int64_t capacity, int64_t rows_per_pass = 0,
                uint64_t seed = 1);

  // For ClusterFormerEncoder's observer: adds H̄ entering `layer` (or a sample of its rows) to
  // that layer's bank.
  void Observe(int64_t layer, const at::Tensor& hbar);
  // The rows a layer's bank holds now ([0, 0] for a layer without a bank).
  at::Tensor Rows(int64_t layer) const;
  // Rows in the smallest bank (0 without cluster layers).
  int64_t min_rows() const;
  // Recomputes every cluster layer's centroids from its bank into `weights` (in place).
  // Returns the mean cosine of the rows to their centroids, averaged over layers.
  double Refresh(TensorMap* weights, uint64_t seed) const;

 private:
  ModelConfig config_;
  int64_t rows_per_pass_;
  at::Generator generator_;              // draws the sampled rows
  std::map<int64_t, MemoryBank> banks_;  // by layer index
};

}  // namespace longqa
