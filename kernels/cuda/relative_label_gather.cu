#include "kernels/cuda/common.cuh"
#include "kernels/relative_label_gather.h"

namespace longqa::kernels::cuda {
namespace {

template <typename T>
__global__ void RelativeLabelGatherKernel(const T* qa, int64_t heads, int64_t num_labels,
                                          const int64_t* labels, int64_t period, int64_t slots,
                                          int64_t n, T* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    RelativeLabelGatherElement(i, qa, heads, num_labels, labels, period, slots, out);
  }
}

}  // namespace

const char* RelativeLabelGather(DType dtype, const void* qa, int64_t rows, int64_t heads,
                                int64_t num_labels, const int64_t* labels, int64_t period,
                                int64_t slots, void* out, void* stream) {
  return WithDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = rows * heads * slots;
    RelativeLabelGatherKernel<T><<<BlocksFor(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T*>(qa), heads, num_labels, labels, period, slots, n,
        static_cast<T*>(out));
    return LaunchError();
  });
}

}  // namespace longqa::kernels::cuda
