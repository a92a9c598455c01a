// Neural clustering attention (Wang et al. 2022, "ClusterFormer: Neural Clustering Attention",
// §3.1-3.2): learned centroids C [k, d] and a projection W^C give the subordinate matrix
// U = softmax over the sequence of C (X W^C)^T (eq. 2); each row joins the cluster of its largest
// subordinate value (eq. 4); rows are sorted by cluster (eq. 5, stable), cut into equal blocks of
// w = ceil(N / k), and each query block attends to its own key block and the previous one (eq. 8;
// the first block's previous one is the last, as the centroid-sorting loss pairs C_1 with C_k);
// results go back to the original order (eq. 10). The masked (decoder) variant is not needed
// here, nor the clustering losses (these layers have no training path).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace longqa {

// x [N, d], projection [d, d] (a Linear weight: X W^C = x projection^T), centroids [k, d]
// → cluster id of every row [N] int64 (ties → lowest id).
at::Tensor NeuralClusterIds(const at::Tensor& x, const at::Tensor& projection,
                            const at::Tensor& centroids);

// One sequence's attention context: q, k, v [N, H, D], cluster_ids [N] in [0, clusters)
// → [N, H, D]. Scores are scaled by 1/sqrt(D).
at::Tensor NeuralClusteringAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                     const at::Tensor& cluster_ids, int64_t clusters);

}  // namespace longqa
