// gather_rows core: out[r, :] = src[index[r], :], or zeros where index[r] is -1 (padding).
// One op serves the Cluster-Former's window gather (H̄ rows → [windows, q+l] slots), the cluster
// layer's permute (sorted rows → chunks of m) and its unpermute (chunks → original order).
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace longqa::kernels {

// One output element. i indexes out as [rows, d] row-major; src rows are src_row_stride apart.
template <typename T>
LONGQA_HD inline void GatherRowsElement(int64_t i,
                                        const T* src,            // [num_src_rows, d] (strided rows)
                                        int64_t src_row_stride,  //
                                        int64_t num_src_rows,    //
                                        const int64_t* index,    // [rows], -1 = zero row
                                        int64_t d,               //
                                        T* out) {                // [rows, d]
  const int64_t row = i / d;
  const int64_t col = i - row * d;
  const int64_t s = index[row];
  out[i] = (s >= 0 && s < num_src_rows) ? src[s * src_row_stride + col] : static_cast<T>(0.0f);
}

}  // namespace longqa::kernels
