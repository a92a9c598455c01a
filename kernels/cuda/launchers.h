// Raw CUDA launchers behind kernels/ops.h: plain pointers and a stream, no LibTorch types, so the
// .cu files compile with nvcc alone (the CI compile check builds them on machines without a GPU).
// In builds without CUDA, no_cuda.cc defines these to fail with a clear message.
#pragma once

#include <cstdint>

namespace longqa::kernels::cuda {

enum class DType { kFloat32, kFloat16, kBFloat16 };

// All launchers enqueue on `stream` (a cudaStream_t) and return an error message, or "" on success.
const char* GatherRows(DType dtype, const void* src, int64_t src_row_stride, int64_t num_src_rows,
                       const int64_t* index, int64_t rows, int64_t d, void* out, void* stream);

const char* OverlapMerge(DType dtype, const void* src, int64_t src_row_stride,
                         const int64_t* offsets, const int64_t* sources, int64_t rows, int64_t d,
                         void* out, void* stream);

const char* RowArgmax(DType dtype, const void* scores, int64_t rows, int64_t num_cols, int64_t* out,
                      void* stream);

// codes [rows] (groups of n), centroids [rows / n, c] → out [rows]: nearest centroid code.
const char* HammingAssign(const int64_t* codes, int64_t rows, int64_t n, const int64_t* centroids,
                          int64_t c, int64_t* out, void* stream);

// One new code per cluster (order: members sorted by cluster; offsets [clusters + 1]).
const char* HammingMajority(const int64_t* codes, const int64_t* order, const int64_t* offsets,
                            const int64_t* old, int64_t clusters, int64_t bits, int64_t* out,
                            void* stream);

const char* SparseDotProduct(DType dtype, const void* q, const void* k, const int64_t* index,
                             int64_t groups, int64_t n, int64_t m, int64_t s, int64_t d, void* out,
                             void* stream);

const char* SparseWeightedSum(DType dtype, const void* weights, const void* v, const int64_t* index,
                              int64_t groups, int64_t n, int64_t m, int64_t s, int64_t dv,
                              void* out, void* stream);

const char* StableCountingSort(const int64_t* keys, const int64_t* seg_offsets,
                               int64_t num_segments, int64_t num_keys, int64_t* counts_scratch,
                               int64_t* perm, void* stream);

const char* RelativeLabelGather(DType dtype, const void* qa, int64_t rows, int64_t heads,
                                int64_t num_labels, const int64_t* labels, int64_t period,
                                int64_t slots, void* out, void* stream);

// scores [heads, rows, cols] with strides (head_stride, row_stride, 1); qa [heads, rows, L].
const char* EtcLabelBias(DType dtype, void* scores, int64_t heads, int64_t rows, int64_t cols,
                         int64_t head_stride, int64_t row_stride, const void* qa,
                         int64_t num_labels, const int64_t* labels, int64_t period, int64_t row0,
                         const int64_t* slot_rows, void* stream);

const char* EtcMembershipBias(DType dtype, void* scores, int64_t heads, int64_t rows, int64_t cols,
                              int64_t head_stride, int64_t row_stride, const void* qa,
                              int64_t num_labels, int64_t part_of, int64_t not_part_of,
                              const int64_t* lo, const int64_t* hi, int64_t col0, bool mask_outside,
                              void* stream);

// The current CUDA stream of LibTorch for the tensor's device (defined in stream.cc, CUDA builds).
void* CurrentStream(int device_index);

}  // namespace longqa::kernels::cuda
