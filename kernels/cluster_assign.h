// cluster_assign core (Cluster-Former eq. 5): the cluster id of a row is the argmax of its cosine
// similarities to the centroids. The similarity GEMM runs in LibTorch (cuBLAS / OpenBLAS); this is
// the row argmax after it, with ties going to the lowest id so that results are deterministic.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace longqa::kernels {

template <typename T>
LONGQA_HD inline void RowArgmax(int64_t row,
                                const T* scores,   // [rows, num_cols]
                                int64_t num_cols,  //
                                int64_t* out) {    // [rows]
  const T* r = scores + row * num_cols;
  int64_t best = 0;
  float best_value = static_cast<float>(r[0]);
  for (int64_t c = 1; c < num_cols; ++c) {
    const float v = static_cast<float>(r[c]);
    if (v > best_value) {
      best_value = v;
      best = c;
    }
  }
  out[row] = best;
}

}  // namespace longqa::kernels
