// hamming_assign cores (clustered attention, Vyas et al. 2020 §3.2.2), the two steps of a Lloyd
// iteration of K-Means in Hamming space: each query's hash code goes to the centroid code nearest
// in Hamming distance (popcount of the XOR), ties to the lowest id, within the query's group (one
// group per head); then each centroid takes, bit by bit, the majority of its members' bits.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace longqa::kernels {

LONGQA_HD inline int HammingDistance(int64_t a, int64_t b) {
#if defined(__CUDA_ARCH__)
  return __popcll(static_cast<unsigned long long>(a ^ b));
#else
  return __builtin_popcountll(static_cast<unsigned long long>(a ^ b));
#endif
}

// row = g * n + i: codes [groups, n], centroids [groups, c], out [groups, n].
LONGQA_HD inline void NearestCode(int64_t row, const int64_t* codes, int64_t n,
                                  const int64_t* centroids, int64_t c, int64_t* out) {
  const int64_t* group_centroids = centroids + (row / n) * c;
  const int64_t code = codes[row];
  int64_t best = 0;
  int best_distance = HammingDistance(code, group_centroids[0]);
  for (int64_t j = 1; j < c; ++j) {
    const int distance = HammingDistance(code, group_centroids[j]);
    if (distance < best_distance) {
      best_distance = distance;
      best = j;
    }
  }
  out[row] = best;
}

// One centroid, cluster = g * c + j: its members are codes[order[offsets[cluster]] ..
// order[offsets[cluster + 1] - 1]]; every bit below `bits` becomes the majority bit of the members,
// or stays as in `old` on a tie (an empty cluster keeps its code).
LONGQA_HD inline void MajorityCode(int64_t cluster, const int64_t* codes, const int64_t* order,
                                   const int64_t* offsets, const int64_t* old, int64_t bits,
                                   int64_t* out) {
  const int64_t begin = offsets[cluster], end = offsets[cluster + 1];
  const int64_t members = end - begin;
  int64_t code = 0;
  for (int64_t b = 0; b < bits; ++b) {
    int64_t ones = 0;
    for (int64_t p = begin; p < end; ++p) ones += (codes[order[p]] >> b) & 1;
    const int64_t bit = 2 * ones > members ? 1 : (2 * ones < members ? 0 : (old[cluster] >> b) & 1);
    code |= bit << b;
  }
  out[cluster] = code;
}

}  // namespace longqa::kernels
