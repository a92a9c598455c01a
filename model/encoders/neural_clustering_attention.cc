#include "model/encoders/neural_clustering_attention.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/ops.h"
#include "model/encoders/transformer_layer.h"

namespace longqa {

at::Tensor NeuralClusterIds(const at::Tensor& x, const at::Tensor& projection,
                            const at::Tensor& centroids) {
  TORCH_CHECK(x.dim() == 2 && projection.dim() == 2 && centroids.dim() == 2 &&
                  centroids.size(1) == x.size(1) && projection.size(1) == x.size(1),
              "neural clustering: x [N, d], projection [d, d], centroids [k, d], got ", x.sizes(),
              ", ", projection.sizes(), ", ", centroids.sizes());
  // Eq. 2 normalises each centroid's row over the sequence; eq. 4 takes each column's argmax.
  const at::Tensor subordinate =
      at::log_softmax(at::matmul(centroids, at::linear(x, projection).t()), 1);  // [k, N]
  return kernels::ScoreArgmax(subordinate.t());
}

namespace {

// Attention of query blocks [B, H, w, D] to key/value blocks [B, H, w2, D] with the keys' padding
// mask key_valid [B, w2].
at::Tensor BlockAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const at::Tensor& key_valid, double scale) {
  at::Tensor scores = at::matmul(q, k.transpose(-1, -2)).mul_(scale);
  scores.masked_fill_(key_valid.logical_not().view({key_valid.size(0), 1, 1, key_valid.size(1)}),
                      -1e30);
  return at::matmul(at::softmax(scores, -1), v);
}

}  // namespace

at::Tensor NeuralClusteringAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                     const at::Tensor& cluster_ids, int64_t clusters) {
  TORCH_CHECK(q.dim() == 3 && k.sizes() == q.sizes() && v.sizes() == q.sizes() &&
                  cluster_ids.dim() == 1 && cluster_ids.size(0) == q.size(0),
              "neural clustering attention: q, k, v [N, H, D] and ids [N], got ", q.sizes(), ", ",
              k.sizes(), ", ", v.sizes(), ", ", cluster_ids.sizes());
  const int64_t n = q.size(0), h = q.size(1), d = q.size(2);
  if (n == 0) return at::zeros_like(q);
  // Eq. 5: the sorted order; eq. 8: blocks of w = ceil(N / k), the last one padded.
  const at::Tensor perm = kernels::StableCountingSort(
      cluster_ids, at::tensor(std::vector<int64_t>{0, n}, at::kLong).to(q.device()), clusters);
  const int64_t w = (n + clusters - 1) / clusters;
  const int64_t blocks = (n + w - 1) / w;
  const int64_t padded = blocks * w;
  auto sorted_blocks = [&](const at::Tensor& t) {  // [N, H, D] → [blocks, H, w, D]
    at::Tensor out = at::zeros({padded, h, d}, t.options());
    out.narrow(0, 0, n).copy_(t.index_select(0, perm));
    return out.view({blocks, w, h, d}).transpose(1, 2);
  };
  const at::Tensor qb = sorted_blocks(q), kb = sorted_blocks(k), vb = sorted_blocks(v);
  const at::Tensor valid =
      (at::arange(padded, at::TensorOptions().dtype(at::kLong).device(q.device())) < n)
          .view({blocks, w});
  // Keys of block i: block i - 1 (circularly) then block i; one block alone sees only itself.
  auto with_previous = [&](const at::Tensor& t, int64_t dim) {
    return blocks == 1 ? t : at::cat({at::roll(t, {1}, {0}), t}, dim);
  };
  const at::Tensor keys = with_previous(kb, 2), values = with_previous(vb, 2);
  const at::Tensor key_valid = with_previous(valid, 1);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  // Blocks in groups whose scores fit the layers' score budget.
  const int64_t per_block = h * w * keys.size(2);
  const int64_t group = std::max<int64_t>(1, kLayerScoreBudget / std::max<int64_t>(1, per_block));
  std::vector<at::Tensor> parts;
  for (int64_t begin = 0; begin < blocks; begin += group) {
    const int64_t count = std::min(group, blocks - begin);
    parts.push_back(BlockAttention(qb.narrow(0, begin, count), keys.narrow(0, begin, count),
                                   values.narrow(0, begin, count),
                                   key_valid.narrow(0, begin, count), scale));
  }
  const at::Tensor sorted_context =
      (parts.size() == 1 ? parts[0] : at::cat(parts, 0)).transpose(1, 2).reshape({padded, h, d});
  // Eq. 10: back to the original order.
  return at::zeros_like(q).index_copy_(0, perm, sorted_context.narrow(0, 0, n));
}

}  // namespace longqa
