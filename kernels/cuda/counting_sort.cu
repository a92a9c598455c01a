#include "kernels/counting_sort.h"
#include "kernels/cuda/common.cuh"

namespace longqa::kernels::cuda {
namespace {

// One thread per segment (a segment is one request's rows): simple and exact. A block-parallel
// scan is the upgrade path when a profile on a GPU shows this op matters.
__global__ void StableCountingSortKernel(const int64_t* keys, const int64_t* seg_offsets,
                                         int64_t num_segments, int64_t num_keys, int64_t* counts,
                                         int64_t* perm) {
  for (int64_t s = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; s < num_segments;
       s += int64_t{blockDim.x} * gridDim.x) {
    StableCountingSortSegment(s, keys, seg_offsets, num_keys, counts + s * (num_keys + 1), perm);
  }
}

}  // namespace

const char* StableCountingSort(const int64_t* keys, const int64_t* seg_offsets,
                               int64_t num_segments, int64_t num_keys, int64_t* counts_scratch,
                               int64_t* perm, void* stream) {
  StableCountingSortKernel<<<BlocksFor(num_segments), kThreads, 0,
                             static_cast<cudaStream_t>(stream)>>>(keys, seg_offsets, num_segments,
                                                                  num_keys, counts_scratch, perm);
  return LaunchError();
}

}  // namespace longqa::kernels::cuda
