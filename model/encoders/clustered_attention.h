// Clustered attention and improved clustered attention (Vyas, Katharopoulos & Fleuret 2020, §3):
// the queries of a sequence are hashed by the signs of B random projections, grouped by K-Means
// in Hamming space (L Lloyd iterations), and attention is computed once per cluster, from the
// mean of its queries, then given to every query of the cluster (eqs. 3-6). The improved form
// (§3.3, eqs. 9-11) recomputes, for every query, the scores of its cluster's top-k keys exactly
// and spreads over them the mass m̂ the cluster's attention gave them. Each head clusters its own
// queries. These layers have no training path (no gradient flows through the assignment).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace longqa {

struct ClusteredAttentionOptions {
  int64_t clusters = 100;   // C (fewer when the sequence has fewer queries)
  int64_t iterations = 10;  // L Lloyd iterations
  int64_t topk = 0;         // k keys recomputed per query: 0 = clustered, > 0 = improved
};

// The B-bit code of every query: bit b set when q · planes[b] > 0. q [H, N, D], planes [B, D]
// with B ≤ 63 → [H, N] int64.
at::Tensor HashQueries(const at::Tensor& q, const at::Tensor& planes);

// K-Means over the codes of each head with the Hamming distance: the initial centroids are the
// codes of evenly spaced queries (i * N / C), each iteration assigns every code to its nearest
// centroid (ties → lowest id) and sets every centroid bit to the majority bit of its members
// (a tie, or an empty cluster, keeps the old bit). codes [H, N], clusters ≤ N → ids [H, N].
at::Tensor HammingKMeans(const at::Tensor& codes, int64_t clusters, int64_t iterations,
                         int64_t bits);

// One sequence's attention context. q, k [H, N, D], v [H, N, Dv], planes [B, D] → [H, N, Dv].
// Scores are scaled by 1/sqrt(D) as in full attention.
at::Tensor ClusteredAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const at::Tensor& planes, const ClusteredAttentionOptions& options);

// The same given the cluster id of every query ([H, N] in [0, clusters)): the attention of
// eqs. 3-6 (topk 0) or eq. 10 (topk > 0) for a fixed partition, as the tests' formulas take it.
at::Tensor ClusteredAttentionForClusters(const at::Tensor& q, const at::Tensor& k,
                                         const at::Tensor& v, const at::Tensor& cluster_ids,
                                         int64_t clusters, int64_t topk);

}  // namespace longqa
