#include "kernels/cuda/common.cuh"
#include "kernels/sparse_attention.h"

namespace longqa::kernels::cuda {
namespace {

template <typename T>
__global__ void SparseDotKernel(const T* q, const T* k, const int64_t* index, int64_t total,
                                int64_t n, int64_t m, int64_t s, int64_t d, T* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{blockDim.x} * gridDim.x) {
    ::longqa::kernels::SparseDotElement<T, float>(i, q, k, index, n, m, s, d, out);
  }
}

template <typename T>
__global__ void SparseWeightedSumKernel(const T* weights, const T* v, const int64_t* index,
                                        int64_t total, int64_t n, int64_t m, int64_t s, int64_t dv,
                                        T* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{blockDim.x} * gridDim.x) {
    ::longqa::kernels::SparseWeightedSumElement<T, float>(i, weights, v, index, n, m, s, dv, out);
  }
}

}  // namespace

const char* SparseDotProduct(DType dtype, const void* q, const void* k, const int64_t* index,
                             int64_t groups, int64_t n, int64_t m, int64_t s, int64_t d, void* out,
                             void* stream) {
  return WithDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = groups * n * s;
    SparseDotKernel<T><<<BlocksFor(total), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T*>(q), static_cast<const T*>(k), index, total, n, m, s, d,
        static_cast<T*>(out));
    return LaunchError();
  });
}

const char* SparseWeightedSum(DType dtype, const void* weights, const void* v, const int64_t* index,
                              int64_t groups, int64_t n, int64_t m, int64_t s, int64_t dv,
                              void* out, void* stream) {
  return WithDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = groups * n * dv;
    SparseWeightedSumKernel<T>
        <<<BlocksFor(total), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
            static_cast<const T*>(weights), static_cast<const T*>(v), index, total, n, m, s, dv,
            static_cast<T*>(out));
    return LaunchError();
  });
}

}  // namespace longqa::kernels::cuda
