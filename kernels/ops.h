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

// Stable sort by key within each segment; returns perm [N] int64 of global row indices
// (perm[k] = row at sorted position k). keys [N] int64 in [0, num_keys),
// seg_offsets [S+1] int64 from 0 to N.
at::Tensor StableCountingSort(const at::Tensor& keys, const at::Tensor& seg_offsets,
                              int64_t num_keys);

// ETC relative attention: out[r, h, s] = qa[r, h, labels[r % period, s]] (zeros where the label
// is -1). qa [rows, heads, L], labels [period, slots] int64 in [-1, L) → [rows, heads, slots].
at::Tensor RelativeLabelGather(const at::Tensor& qa, const at::Tensor& labels);

// The inverse of a permutation: inv[perm[k]] = k.
at::Tensor InvertPermutation(const at::Tensor& perm);

}  // namespace longqa::kernels
