// The kernels' tensor-level interface: what model/ calls. Each op checks its inputs (messages name
// the op and the argument), dispatches by device (CPU launcher or CUDA launcher, both running the
// __host__ __device__ core in kernels/<op>.h) and by dtype (f32, f16, bf16; f64 on CPU).
// No CUDA includes and no #ifdef here.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace longqa::kernels {

// out[r] = src[index[r]], zeros where index[r] == -1.
// src [N, d] (rows may be strided), index [M] int64 in [-1, N) → [M, d].
at::Tensor GatherRows(const at::Tensor& src, const at::Tensor& index);

// out[r] = mean of src rows sources[offsets[r] .. offsets[r+1]) (zeros for an empty list).
// src [N, d], offsets [M+1] int64 non-decreasing from 0, sources int64 in [0, N) → [M, d].
at::Tensor OverlapMerge(const at::Tensor& src, const at::Tensor& offsets,
                        const at::Tensor& sources);

// Cluster id of each row: argmax over centroids of the cosine similarity (ties → lowest id).
// rows [N, d], centroids [C, d] (any norm) → [N] int64.
at::Tensor ClusterAssign(const at::Tensor& rows, const at::Tensor& centroids);

// The column of each row's highest score (ties → lowest column). scores [N, C] → [N] int64.
at::Tensor ScoreArgmax(const at::Tensor& scores);

// Clustered attention's Lloyd step in Hamming space: for every hash code, the index of the nearest
// centroid code of its group (popcount of the XOR; ties → lowest index).
// codes [G, N] int64, centroids [G, C] int64 → [G, N] int64.
at::Tensor HammingAssign(const at::Tensor& codes, const at::Tensor& centroids);

// The update step of that K-Means: every centroid code becomes the bitwise majority of its
// members' codes (a tie, or no member, keeps the old bit). codes [G, N], order [G * N] (flat
// indices of codes, sorted by cluster g * C + j), offsets [G * C + 1] (where each cluster's
// members start in order), centroids [G, C] → [G, C].
at::Tensor HammingMajority(const at::Tensor& codes, const at::Tensor& order,
                           const at::Tensor& offsets, const at::Tensor& centroids, int64_t bits);

// Scores of listed (query, key) pairs, per group: out[g, i, j] = q[g, i] · k[g, index[g, i, j]].
// q [G, N, d], k [G, M, d], index [G, N, S] int64 in [0, M) → [G, N, S].
at::Tensor SparseDotProduct(const at::Tensor& q, const at::Tensor& k, const at::Tensor& index);

// Weighted sums of listed value rows: out[g, i] = sum_j weights[g, i, j] * v[g, index[g, i, j]].
// weights [G, N, S], v [G, M, dv], index [G, N, S] int64 in [0, M) → [G, N, dv].
at::Tensor SparseWeightedSum(const at::Tensor& weights, const at::Tensor& v,
                             const at::Tensor& index);

// Stable sort by key within each segment; returns perm [N] int64 of global row indices
// (perm[k] = row at sorted position k). keys [N] int64 in [0, num_keys),
// seg_offsets [S+1] int64 from 0 to N.
at::Tensor StableCountingSort(const at::Tensor& keys, const at::Tensor& seg_offsets,
                              int64_t num_keys);

// ETC relative attention: out[r, h, s] = qa[r, h, labels[r % period, s]] (zeros where the label
// is -1). qa [rows, heads, L], labels [period, slots] int64 in [-1, L) → [rows, heads, slots].
at::Tensor RelativeLabelGather(const at::Tensor& qa, const at::Tensor& labels);

// ETC's relative-label term, in place (etc_score_bias.h): scores[h, r, c] += qa[h, r, label] with
// label = labels[(row0 + r) % P, c]; -1e30 where the label is -1 or slot_rows (optional, flat
// [*, C]) is negative at [(row0 + r) / P, c]. scores [H, R, C] (last dim contiguous; a column slice
// of a wider buffer is fine), qa [H, R, L], labels [P, C] int64 in [-1, L).
void EtcLabelBias(const at::Tensor& scores, const at::Tensor& qa, const at::Tensor& labels,
                  int64_t row0, const at::Tensor& slot_rows);
// The same on the CPU through the per-element core that the CUDA launcher runs (etc_score_bias.h),
// for tests: EtcLabelBias's CPU launcher takes a faster row form.
void EtcLabelBiasByElement(const at::Tensor& scores, const at::Tensor& qa, const at::Tensor& labels,
                           int64_t row0, const at::Tensor& slot_rows);

// ETC's "part of" term, in place: scores[h, r, c] += qa[h, r, part_of] when
// lo[r] <= col0 + c < hi[r], else qa[h, r, not_part_of]; with mask_outside, -1e30 outside that
// range for rows with lo[r] >= 0. scores [H, R, C] (last dim contiguous), qa [H, R, L],
// lo and hi [R] int64.
void EtcMembershipBias(const at::Tensor& scores, const at::Tensor& qa, int64_t part_of,
                       int64_t not_part_of, const at::Tensor& lo, const at::Tensor& hi,
                       int64_t col0, bool mask_outside);
// The same on the CPU through the per-element core that the CUDA launcher runs (etc_score_bias.h),
// for tests: EtcMembershipBias's CPU launcher takes a faster row form.
void EtcMembershipBiasByElement(const at::Tensor& scores, const at::Tensor& qa, int64_t part_of,
                                int64_t not_part_of, const at::Tensor& lo, const at::Tensor& hi,
                                int64_t col0, bool mask_outside);

// The inverse of a permutation: inv[perm[k]] = k.
at::Tensor InvertPermutation(const at::Tensor& perm);

}  // namespace longqa::kernels
