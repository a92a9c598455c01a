// Shared pieces of the CUDA launchers: dtype mapping and the launch shape.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/launchers.h"

namespace longqa::kernels::cuda {

constexpr int kThreads = 256;

inline unsigned BlocksFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

inline const char* LaunchError() {
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? "" : cudaGetErrorString(err);
}

// Calls f(T{}) with the CUDA element type for dtype.
template <typename F>
const char* WithDType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32:
      return f(float{});
    case DType::kFloat16:
      return f(__half{});
    case DType::kBFloat16:
      return f(__nv_bfloat16{});
  }
  return "unsupported dtype";
}

}  // namespace longqa::kernels::cuda
