#include "train/cluster_memory.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <limits>

namespace longqa {

ClusterMemory::ClusterMemory(const ModelConfig& config, int64_t capacity, int64_t rows_per_pass,
                             uint64_t seed)
    : config_(config),
      rows_per_pass_(rows_per_pass),
      generator_(at::detail::createCPUGenerator(seed)) {
  for (int64_t i = 0; i < config.num_layers(); ++i) {
    if (config.layers[i] == 'C') banks_.emplace(i, MemoryBank(capacity));
  }
}

void ClusterMemory::Observe(int64_t layer, const at::Tensor& hbar) {
  const auto it = banks_.find(layer);
  if (it == banks_.end()) return;
  const int64_t rows = hbar.size(0);
  if (rows_per_pass_ <= 0 || rows <= rows_per_pass_) {
    it->second.Add(hbar);  // detached by Add; H̄ is never written in place
    return;
  }
  const at::Tensor picked = at::randperm(rows, generator_, at::TensorOptions().dtype(at::kLong))
                                .narrow(0, 0, rows_per_pass_);
  it->second.Add(hbar.detach().index_select(0, picked.to(hbar.device())));
}

at::Tensor ClusterMemory::Rows(int64_t layer) const {
  const auto it = banks_.find(layer);
  return it == banks_.end() ? at::empty({0, 0}) : it->second.Rows();
}

int64_t ClusterMemory::min_rows() const {
  if (banks_.empty()) return 0;
  int64_t rows = std::numeric_limits<int64_t>::max();
  for (const auto& [layer, bank] : banks_) rows = std::min(rows, bank.size());
  return rows;
}

double ClusterMemory::Refresh(TensorMap* weights, uint64_t seed) const {
  at::NoGradGuard no_grad;
  double cosine = 0;
  int64_t cluster_index = 0;
  for (const auto& [layer, bank] : banks_) {
    KMeansOptions options;
    options.clusters = config_.num_clusters[cluster_index++];
    options.seed = seed + static_cast<uint64_t>(layer);
    const KMeansResult result = SphericalKMeans(bank.Rows(), options);
    weights->at(LayerScope(layer) + ".centroids")
        .copy_(GreedyNearestNeighbourOrder(result.centroids));
    cosine += result.mean_cosine;
  }
  return banks_.empty() ? 0 : cosine / static_cast<double>(banks_.size());
}

}  // namespace longqa
