#include "kernels/cuda/common.cuh"
#include "kernels/hamming_assign.h"

namespace longqa::kernels::cuda {
namespace {

__global__ void HammingAssignKernel(const int64_t* codes, int64_t rows, int64_t n,
                                    const int64_t* centroids, int64_t c, int64_t* out) {
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows;
       r += int64_t{blockDim.x} * gridDim.x) {
    ::longqa::kernels::NearestCode(r, codes, n, centroids, c, out);
  }
}

__global__ void HammingMajorityKernel(const int64_t* codes, const int64_t* order,
                                      const int64_t* offsets, const int64_t* old, int64_t clusters,
                                      int64_t bits, int64_t* out) {
  for (int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; c < clusters;
       c += int64_t{blockDim.x} * gridDim.x) {
    ::longqa::kernels::MajorityCode(c, codes, order, offsets, old, bits, out);
  }
}

}  // namespace

const char* HammingMajority(const int64_t* codes, const int64_t* order, const int64_t* offsets,
                            const int64_t* old, int64_t clusters, int64_t bits, int64_t* out,
                            void* stream) {
  HammingMajorityKernel<<<BlocksFor(clusters), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      codes, order, offsets, old, clusters, bits, out);
  return LaunchError();
}

const char* HammingAssign(const int64_t* codes, int64_t rows, int64_t n, const int64_t* centroids,
                          int64_t c, int64_t* out, void* stream) {
  HammingAssignKernel<<<BlocksFor(rows), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      codes, rows, n, centroids, c, out);
  return LaunchError();
}

}  // namespace longqa::kernels::cuda
