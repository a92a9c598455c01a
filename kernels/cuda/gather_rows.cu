#include "kernels/cuda/common.cuh"
#include "kernels/gather_rows.h"

namespace longqa::kernels::cuda {
namespace {

template <typename T>
__global__ void GatherRowsKernel(const T* src, int64_t src_row_stride, int64_t num_src_rows,
                                 const int64_t* index, int64_t n, int64_t d, T* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    GatherRowsElement(i, src, src_row_stride, num_src_rows, index, d, out);
  }
}

}  // namespace

const char* GatherRows(DType dtype, const void* src, int64_t src_row_stride, int64_t num_src_rows,
                       const int64_t* index, int64_t rows, int64_t d, void* out, void* stream) {
  return WithDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = rows * d;
    GatherRowsKernel<T><<<BlocksFor(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T*>(src), src_row_stride, num_src_rows, index, n, d,
        static_cast<T*>(out));
    return LaunchError();
  });
}

}  // namespace longqa::kernels::cuda
