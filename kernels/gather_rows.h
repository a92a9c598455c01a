// gather_rows core: out[r, :] = src[index[r], :], or zeros where index[r] is -1 (padding).
// One op serves the Cluster-Former's window gather (H̄ rows → [windows, q+l] slots), the cluster
// layer's permute (sorted rows → chunks of m) and its unpermute (chunks → original order).
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace longqa::kernels {

// Output element (row, col); src rows are src_row_stride apart.
template <typename T>
LONGQA_HD inline void GatherRowsAt(int64_t row, int64_t col,
                                   const T* src,            // [num_src_rows, d] (strided rows)
                                   int64_t src_row_stride,  //
                                   int64_t num_src_rows,    //
                                   const int64_t* index,    // [rows], -1 = zero row
                                   int64_t d,               //
                                   T* out) {                // [rows, d]
  const int64_t s = index[row];
  out[row * d + col] =
      (s >= 0 && s < num_src_rows) ? src[s * src_row_stride + col] : static_cast<T>(0.0f);
}

// The same by flat index i into out [rows, d] (one CUDA thread per element; the CPU launcher
// loops (row, col) directly, which lets the compiler vectorise the columns).
template <typename T>
LONGQA_HD inline void GatherRowsElement(int64_t i, const T* src, int64_t src_row_stride,
                                        int64_t num_src_rows, const int64_t* index, int64_t d,
                                        T* out) {
  const int64_t row = i / d;
  GatherRowsAt(row, i - row * d, src, src_row_stride, num_src_rows, index, d, out);
}

}  // namespace longqa::kernels
