#include "model/encoders/clustered_attention.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "kernels/ops.h"
#include "model/encoders/transformer_layer.h"

namespace longqa {
at::Tensor HashQueries(const at::Tensor& q, const at::Tensor& planes) {
  TORCH_CHECK(q.dim() == 3 && planes.dim() == 2 && planes.size(1) == q.size(2),
              "clustered attention: planes must be [B, ", q.size(-1), "], got ", planes.sizes());
  TORCH_CHECK(planes.size(0) >= 1 && planes.size(0) <= 63,
              "clustered attention: 1 to 63 hash bits, got ", planes.size(0));
  const int64_t bits = planes.size(0);
  const at::Tensor bit_values =
      at::pow(at::full({bits}, 2, at::kLong), at::arange(bits, at::kLong)).to(q.device());
  const at::Tensor p = planes.to(q.scalar_type()).t();
  // One head at a time: the [N, B] int64 bits of all heads at once would outweigh the scores.
  std::vector<at::Tensor> codes;
  for (int64_t head = 0; head < q.size(0); ++head) {
    codes.push_back((at::matmul(q[head], p).gt(0).to(at::kLong) * bit_values).sum(-1));
  }
  return at::stack(codes);
}

at::Tensor HammingKMeans(const at::Tensor& codes, int64_t clusters, int64_t iterations,
                         int64_t bits) {
  const int64_t h = codes.size(0), n = codes.size(1);
  TORCH_CHECK(clusters >= 1 && clusters <= n, "clustered attention: ", clusters, " clusters for ",
              n, " queries");
  const at::TensorOptions longs = codes.options();
  const at::Tensor start = at::div(at::arange(clusters, longs) * n, clusters, "floor");
  at::Tensor centroids = codes.index_select(1, start).contiguous();  // [H, C]
  at::Tensor ids = kernels::HammingAssign(codes, centroids);
  // Each head is a segment of the sort; cluster j of head g is key j, and g * C + j overall.
  const at::Tensor head_segments = at::arange(h + 1, longs) * n;
  const at::Tensor head_base = (at::arange(h, longs) * clusters).unsqueeze(1);
  for (int64_t it = 0; it < iterations; ++it) {
    const at::Tensor flat_ids = ids.reshape({-1});
    const at::Tensor order = kernels::StableCountingSort(flat_ids, head_segments, clusters);
    const at::Tensor members = at::bincount((ids + head_base).reshape({-1}), {}, h * clusters);
    const at::Tensor offsets = at::cat({at::zeros({1}, longs), at::cumsum(members, 0)});
    centroids = kernels::HammingMajority(codes, order, offsets, centroids, bits);
    ids = kernels::HammingAssign(codes, centroids);
  }
  return ids;
}

at::Tensor ClusteredAttentionForClusters(const at::Tensor& q, const at::Tensor& k,
                                         const at::Tensor& v, const at::Tensor& cluster_ids,
                                         int64_t clusters, int64_t topk) {
  const int64_t h = q.size(0), n = q.size(1), d = q.size(2), dv = v.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  // Eq. 3: each centroid is the mean of its queries (an empty cluster's is never read).
  const at::Tensor members = at::zeros({h, clusters}, q.options())
                                 .scatter_add_(1, cluster_ids, at::ones({h, n}, q.options()));
  const at::Tensor centroids = at::zeros({h, clusters, d}, q.options())
                                   .scatter_add_(1, cluster_ids.unsqueeze(-1).expand({h, n, d}), q)
                                   .div_(members.clamp_min(1).unsqueeze(-1));
  // Eqs. 4-5: the clusters' attention over all keys and their new values.
  const at::Tensor cluster_attention =
      at::softmax(at::matmul(centroids, k.transpose(1, 2)).mul_(scale), -1);  // [H, C, N]
  const at::Tensor cluster_values = at::matmul(cluster_attention, v);         // [H, C, Dv]
  const at::Tensor per_query = cluster_ids.unsqueeze(-1);
  if (topk <= 0) return cluster_values.gather(1, per_query.expand({h, n, dv}));  // eq. 6

  // Eqs. 9-11: the cluster's top-k keys get the query's own softmax over them, scaled to the mass
  // m̂ the cluster gave them; the other keys keep the cluster's weights.
  const int64_t kk = std::min(topk, n);
  const auto [top_weights, top_keys] = at::topk(cluster_attention, kk, -1);  // [H, C, k]
  const at::Tensor mass = top_weights.sum(-1);                               // [H, C]
  const at::Tensor rest_values =
      cluster_values - kernels::SparseWeightedSum(top_weights, v, top_keys);
  const at::Tensor query_keys = top_keys.gather(1, per_query.expand({h, n, kk}));  // [H, N, k]
  const at::Tensor top_attention =
      at::softmax(kernels::SparseDotProduct(q, k, query_keys).mul_(scale), -1)
          .mul_(mass.gather(1, cluster_ids).unsqueeze(-1));
  return rest_values.gather(1, per_query.expand({h, n, dv}))
      .add_(kernels::SparseWeightedSum(top_attention, v, query_keys));
}

at::Tensor ClusteredAttention(const at::Tensor& q_in, const at::Tensor& k_in,
                              const at::Tensor& v_in, const at::Tensor& planes,
                              const ClusteredAttentionOptions& options) {
  TORCH_CHECK(q_in.dim() == 3 && k_in.sizes() == q_in.sizes() && v_in.dim() == 3 &&
                  v_in.size(0) == q_in.size(0) && v_in.size(1) == q_in.size(1),
              "clustered attention: q, k [H, N, D] and v [H, N, Dv], got ", q_in.sizes(), ", ",
              k_in.sizes(), ", ", v_in.sizes());
  const at::Tensor q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous();
  const int64_t h = q.size(0), n = q.size(1);
  if (n == 0) return at::zeros_like(v);
  const int64_t clusters = std::min(options.clusters, n);
  const at::Tensor ids =
      HammingKMeans(HashQueries(q, planes), clusters, options.iterations, planes.size(0));
  // Heads in groups whose cluster scores [C, N] fit the layers' score budget.
  const int64_t group =
      std::max<int64_t>(1, kLayerScoreBudget / std::max<int64_t>(1, clusters * n));
  if (group >= h) return ClusteredAttentionForClusters(q, k, v, ids, clusters, options.topk);
  std::vector<at::Tensor> outs;
  for (int64_t begin = 0; begin < h; begin += group) {
    const int64_t count = std::min(group, h - begin);
    outs.push_back(ClusteredAttentionForClusters(
        q.narrow(0, begin, count), k.narrow(0, begin, count), v.narrow(0, begin, count),
        ids.narrow(0, begin, count), clusters, options.topk));
  }
  return at::cat(outs, 0);
}

}  // namespace longqa
