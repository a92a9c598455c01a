// overlap_merge core (Cluster-Former eq. 3): every destination row is the mean of a list of
// source rows, given in CSR form. After a sliding-window layer each context token becomes the mean
// of its copies in all windows that hold it (for l ≤ 2m: the paper's average of two neighbours),
// and each question copy takes its single window row. Deterministic: no atomics.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace longqa::kernels {

// One output element. i indexes out as [rows, d]; row r averages src rows
// sources[offsets[r]] .. sources[offsets[r+1]-1]; an empty list gives zeros.
template <typename T, typename Acc>
LONGQA_HD inline void OverlapMergeElement(int64_t i,
                                          const T* src,            // [num_src_rows, d] (strided)
                                          int64_t src_row_stride,  //
                                          const int64_t* offsets,  // [rows + 1]
                                          const int64_t* sources,  // [offsets[rows]]
                                          int64_t d,               //
                                          T* out) {                // [rows, d]
  const int64_t row = i / d;
  const int64_t col = i - row * d;
  const int64_t begin = offsets[row];
  const int64_t end = offsets[row + 1];
  Acc acc = static_cast<Acc>(0.0f);
  for (int64_t s = begin; s < end; ++s) {
    acc += static_cast<Acc>(src[sources[s] * src_row_stride + col]);
  }
  out[i] = end > begin ? static_cast<T>(acc / static_cast<Acc>(end - begin)) : static_cast<T>(0.0f);
}

}  // namespace longqa::kernels
