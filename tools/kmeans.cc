#include "tools/kmeans.h"

#include <ATen/ATen.h>

#include "kernels/ops.h"

namespace longqa {
namespace {

at::Tensor Normalized(const at::Tensor& x) { return x / x.norm(2, {1}, true).clamp_min(1e-12); }

// Cosine of every point to its assigned centroid.
at::Tensor AssignedCosine(const at::Tensor& unit_points, const at::Tensor& centroids,
                          const at::Tensor& assignment) {
  return (unit_points * centroids.index_select(0, assignment)).sum(1);
}

}  // namespace

KMeansResult SphericalKMeans(const at::Tensor& points, const KMeansOptions& options) {
  const int64_t n = points.size(0), k = options.clusters;
  TORCH_CHECK(points.dim() == 2 && n >= k && k >= 1, "kmeans: need [N, d] points with N ≥ ", k);
  at::Generator gen = at::detail::createCPUGenerator(options.seed);
  const at::Tensor x = Normalized(points.to(at::kFloat));

  // k-means++: the first centre uniformly, then each next with probability ∝ distance², where
  // distance = 1 − cosine to the nearest centre chosen so far.
  std::vector<int64_t> chosen = {at::randint(n, {1}, gen).item<int64_t>()};
  at::Tensor best_cos = at::matmul(x, x[chosen[0]]);
  for (int64_t c = 1; c < k; ++c) {
    at::Tensor weight = (1.0 - best_cos).clamp_min(0).pow(2).to(at::kCPU).to(at::kDouble);
    for (int64_t picked : chosen) weight[picked] = 0;  // never the same point twice
    const double total = weight.sum().item<double>();
    const int64_t next = total > 0 ? at::multinomial(weight, 1, false, gen).item<int64_t>()
                                   : (chosen.back() + 1) % n;  // all points identical
    chosen.push_back(next);
    best_cos = at::maximum(best_cos, at::matmul(x, x[next]));
  }
  at::Tensor centroids = x.index_select(0, at::tensor(chosen, at::kLong).to(x.device())).clone();

  KMeansResult result;
  double previous = -2;
  const at::Tensor whole = at::tensor(std::vector<int64_t>{0, n}, at::kLong).to(x.device());
  // Each iteration's assignment to the new centroids serves the next iteration's update.
  result.assignment = kernels::ClusterAssign(x, centroids);
  for (result.iterations = 1; result.iterations <= options.max_iterations; ++result.iterations) {
    // Update: the mean of each cluster's points (a CSR mean over the points sorted by cluster).
    const at::Tensor perm = kernels::StableCountingSort(result.assignment, whole, k);
    const at::Tensor counts = at::bincount(result.assignment, {}, k);
    const at::Tensor offsets = at::cat({at::zeros({1}, counts.options()), counts.cumsum(0)});
    at::Tensor means = kernels::OverlapMerge(x, offsets, perm);
    // Empty clusters take the points their centroids serve worst, one each.
    const at::Tensor empty = (counts == 0).nonzero().flatten().to(at::kCPU);
    if (empty.numel() > 0) {
      const at::Tensor cos = AssignedCosine(x, centroids, result.assignment);
      const at::Tensor worst = std::get<1>(cos.topk(empty.numel(), 0, /*largest=*/false));
      means.index_copy_(0, empty.to(x.device()), x.index_select(0, worst));
    }
    centroids = Normalized(means);
    result.assignment = kernels::ClusterAssign(x, centroids);
    result.mean_cosine = AssignedCosine(x, centroids, result.assignment).mean().item<double>();
    if (result.mean_cosine - previous < options.tolerance) break;
    previous = result.mean_cosine;
  }
  result.iterations = std::min(result.iterations, options.max_iterations);
  result.centroids = centroids;
  return result;
}

at::Tensor GreedyNearestNeighbourOrder(const at::Tensor& centroids) {
  const int64_t k = centroids.size(0);
  const at::Tensor sim = at::matmul(Normalized(centroids), Normalized(centroids).t())
                             .to(at::kCPU)
                             .to(at::kDouble)
                             .contiguous();
  const double* s = sim.data_ptr<double>();
  std::vector<bool> used(k, false);
  std::vector<int64_t> order = {0};
  used[0] = true;
  for (int64_t step = 1; step < k; ++step) {
    const int64_t last = order.back();
    int64_t best = -1;
    for (int64_t j = 0; j < k; ++j) {
      if (!used[j] && (best < 0 || s[last * k + j] > s[last * k + best])) best = j;
    }
    used[best] = true;
    order.push_back(best);
  }
  return centroids.index_select(0, at::tensor(order, at::kLong).to(centroids.device()));
}

void MemoryBank::Add(const at::Tensor& rows) {
  if (rows.size(0) == 0) return;
  chunks_.push_back(rows.detach().to(at::kCPU).to(at::kFloat).contiguous());
  size_ += rows.size(0);
  while (size_ - chunks_.front().size(0) >= capacity_) {
    size_ -= chunks_.front().size(0);
    chunks_.pop_front();
  }
}

at::Tensor MemoryBank::Rows() const {
  if (chunks_.empty()) return at::empty({0, 0});
  const at::Tensor all = at::cat(std::vector<at::Tensor>(chunks_.begin(), chunks_.end()));
  return all.narrow(0, std::max<int64_t>(0, all.size(0) - capacity_),
                    std::min<int64_t>(all.size(0), capacity_));
}

}  // namespace longqa
