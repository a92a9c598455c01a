// sparse_attention cores (improved clustered attention, Vyas et al. 2020 §3.3, eq. 11): every query
// meets only a short list of keys (its cluster's top-k), so the scores and the weighted value sum
// are computed for those pairs alone instead of from the full [n, m] score matrix. Rows are
// grouped (one group per head); a query row's list indexes the keys of its own group.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace longqa::kernels {

// One score. i indexes out as [groups * n, s]: out[row, j] = q[row] · k[g * m + index[row, j]]
// with g = row / n.
template <typename T, typename Acc>
LONGQA_HD inline void SparseDotElement(int64_t i,
                                       const T* q,            // [groups * n, d]
                                       const T* k,            // [groups * m, d]
                                       const int64_t* index,  // [groups * n, s] in [0, m)
                                       int64_t n, int64_t m,  //
                                       int64_t s, int64_t d,  //
                                       T* out) {              // [groups * n, s]
  const int64_t row = i / s;
  const T* q_row = q + row * d;
  const T* k_row = k + ((row / n) * m + index[i]) * d;
  Acc acc = static_cast<Acc>(0.0f);
  for (int64_t e = 0; e < d; ++e) acc += static_cast<Acc>(q_row[e]) * static_cast<Acc>(k_row[e]);
  out[i] = static_cast<T>(acc);
}

// One output element. i indexes out as [groups * n, dv]:
// out[row, col] = sum_j weights[row, j] * v[g * m + index[row, j], col] with g = row / n.
template <typename T, typename Acc>
LONGQA_HD inline void SparseWeightedSumElement(int64_t i,
                                               const T* weights,       // [groups * n, s]
                                               const T* v,             // [groups * m, dv]
                                               const int64_t* index,   // [groups * n, s]
                                               int64_t n, int64_t m,   //
                                               int64_t s, int64_t dv,  //
                                               T* out) {               // [groups * n, dv]
  const int64_t row = i / dv;
  const int64_t col = i - row * dv;
  const T* v_group = v + (row / n) * m * dv;
  Acc acc = static_cast<Acc>(0.0f);
  for (int64_t j = 0; j < s; ++j) {
    acc += static_cast<Acc>(weights[row * s + j]) *
           static_cast<Acc>(v_group[index[row * s + j] * dv + col]);
  }
  out[i] = static_cast<T>(acc);
}

}  // namespace longqa::kernels
