// Centroids for cluster layers (cluster_former_v2 Algorithm 1, GetCentroids): spherical K-Means
// over a memory bank of hidden states (k-means++ seeding, Lloyd iterations to a tolerance, empty
// clusters re-seeded with the worst-served point), then a greedy order in which each centroid's
// successor is its nearest unused neighbour. Cosine similarity throughout, because the layer
// assigns rows by cosine (eq. 5). Assignment and update run on the kernels (cluster_assign;
// stable_counting_sort + overlap_merge as a CSR mean), so they run on CPU or CUDA alike.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <deque>

namespace longqa {

struct KMeansOptions {
  int64_t clusters = 64;
  int64_t max_iterations = 50;
  double tolerance = 1e-4;  // stop when the mean cosine improves by less than this
  uint64_t seed = 1;
};

struct KMeansResult {
  at::Tensor centroids;   // [C, d], unit norm
  at::Tensor assignment;  // [N] int64
  int64_t iterations = 0;
  double mean_cosine = 0;  // of each point to its centroid
};

// points [N, d] (N ≥ clusters). Deterministic for a seed.
KMeansResult SphericalKMeans(const at::Tensor& points, const KMeansOptions& options);

// GetCentroids' ordering: start at row 0, then repeatedly the most cosine-similar unused row.
at::Tensor GreedyNearestNeighbourOrder(const at::Tensor& centroids);

// A bounded queue of the most recent hidden states (Algorithm 1's Memory).
class MemoryBank {
 public:
  explicit MemoryBank(int64_t capacity) : capacity_(capacity) {}
  void Add(const at::Tensor& rows);  // [n, d]; oldest rows leave first
  at::Tensor Rows() const;           // [min(total, capacity), d]
  int64_t size() const { return size_; }

 private:
  int64_t capacity_;
  int64_t size_ = 0;
  std::deque<at::Tensor> chunks_;
};

}  // namespace longqa
