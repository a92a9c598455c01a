// LibTorch's current CUDA stream, for the launchers (compiled only in CUDA builds).
#include <c10/cuda/CUDAStream.h>

#include "kernels/cuda/launchers.h"

namespace longqa::kernels::cuda {

void* CurrentStream(int device_index) {
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_index)).stream();
}

}  // namespace longqa::kernels::cuda
