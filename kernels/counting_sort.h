// Stable counting sort by cluster id, one segment (one request's H̄ rows) at a time: histogram,
// exclusive scan, stable scatter. Rows with equal ids keep their position order (Cluster-Former
// eq. 6: "same values sorted by the corresponding position"). The result is a permutation:
// perm[k] is the row that lands at sorted position k.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace longqa::kernels {

// Sorts segment `seg`: rows seg_offsets[seg] .. seg_offsets[seg+1]-1 by keys in [0, num_keys).
// Keys out of range are clamped (the op's checks reject them on the host; the clamp keeps a bad
// key from writing outside the segment on a device). counts is scratch of num_keys + 1 entries
// that belongs to this segment alone.
LONGQA_HD inline void StableCountingSortSegment(int64_t seg,
                                                const int64_t* keys,         // [rows]
                                                const int64_t* seg_offsets,  // [segments + 1]
                                                int64_t num_keys,            //
                                                int64_t* counts,             // [num_keys + 1]
                                                int64_t* perm) {             // [rows]
  const int64_t begin = seg_offsets[seg];
  const int64_t end = seg_offsets[seg + 1];
  for (int64_t k = 0; k <= num_keys; ++k) counts[k] = 0;
  auto clamp = [num_keys](int64_t key) {
    return key < 0 ? int64_t{0} : (key >= num_keys ? num_keys - 1 : key);
  };
  for (int64_t i = begin; i < end; ++i) ++counts[clamp(keys[i]) + 1];
  for (int64_t k = 1; k <= num_keys; ++k) counts[k] += counts[k - 1];  // exclusive starts
  for (int64_t i = begin; i < end; ++i) perm[begin + counts[clamp(keys[i])]++] = i;
}

}  // namespace longqa::kernels
