#include "kernels/cluster_assign.h"
#include "kernels/cuda/common.cuh"

namespace longqa::kernels::cuda {
namespace {

template <typename T>
__global__ void RowArgmaxKernel(const T* scores, int64_t rows, int64_t num_cols, int64_t* out) {
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows;
       r += int64_t{blockDim.x} * gridDim.x) {
    ::longqa::kernels::RowArgmax(r, scores, num_cols, out);
  }
}

}  // namespace

const char* RowArgmax(DType dtype, const void* scores, int64_t rows, int64_t num_cols, int64_t* out,
                      void* stream) {
  return WithDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    RowArgmaxKernel<T><<<BlocksFor(rows), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T*>(scores), rows, num_cols, out);
    return LaunchError();
  });
}

}  // namespace longqa::kernels::cuda
