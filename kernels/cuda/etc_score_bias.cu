#include "kernels/cuda/common.cuh"
#include "kernels/etc_score_bias.h"

namespace longqa::kernels::cuda {
namespace {

// One thread per score element; float accumulation for every dtype.
template <typename T>
__global__ void EtcLabelBiasKernel(T* scores, int64_t heads, int64_t rows, int64_t cols,
                                   int64_t head_stride, int64_t row_stride, const T* qa,
                                   int64_t num_labels, const int64_t* labels, int64_t period,
                                   int64_t row0, const int64_t* slot_rows) {
  const int64_t n = heads * rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t t = i / cols;
    EtcLabelBiasAt<T, float>(t / rows, t % rows, i - t * cols, scores, head_stride, row_stride, qa,
                             rows, num_labels, labels, period, cols, row0, slot_rows);
  }
}

template <typename T>
__global__ void EtcMembershipBiasKernel(T* scores, int64_t heads, int64_t rows, int64_t cols,
                                        int64_t head_stride, int64_t row_stride, const T* qa,
                                        int64_t num_labels, int64_t part_of, int64_t not_part_of,
                                        const int64_t* lo, const int64_t* hi, int64_t col0,
                                        bool mask_outside) {
  const int64_t n = heads * rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t t = i / cols;
    EtcMembershipBiasAt<T, float>(t / rows, t % rows, i - t * cols, scores, head_stride, row_stride,
                                  qa, rows, num_labels, part_of, not_part_of, lo, hi, col0,
                                  mask_outside);
  }
}

}  // namespace

const char* EtcLabelBias(DType dtype, void* scores, int64_t heads, int64_t rows, int64_t cols,
                         int64_t head_stride, int64_t row_stride, const void* qa,
                         int64_t num_labels, const int64_t* labels, int64_t period, int64_t row0,
                         const int64_t* slot_rows, void* stream) {
  return WithDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    EtcLabelBiasKernel<T>
        <<<BlocksFor(heads * rows * cols), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
            static_cast<T*>(scores), heads, rows, cols, head_stride, row_stride,
            static_cast<const T*>(qa), num_labels, labels, period, row0, slot_rows);
    return LaunchError();
  });
}

const char* EtcMembershipBias(DType dtype, void* scores, int64_t heads, int64_t rows, int64_t cols,
                              int64_t head_stride, int64_t row_stride, const void* qa,
                              int64_t num_labels, int64_t part_of, int64_t not_part_of,
                              const int64_t* lo, const int64_t* hi, int64_t col0, bool mask_outside,
                              void* stream) {
  return WithDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    EtcMembershipBiasKernel<T>
        <<<BlocksFor(heads * rows * cols), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
            static_cast<T*>(scores), heads, rows, cols, head_stride, row_stride,
            static_cast<const T*>(qa), num_labels, part_of, not_part_of, lo, hi, col0,
            mask_outside);
    return LaunchError();
  });
}

}  // namespace longqa::kernels::cuda
