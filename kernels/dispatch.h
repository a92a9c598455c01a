// Helpers shared by the ops' check-and-dispatch code (kernels/*.cc): argument checks with
// messages, the CUDA dtype mapping, and the CPU loop that runs a core over rows.
#pragma once

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <type_traits>

#include "kernels/cuda/launchers.h"

namespace longqa::kernels {

// Float accumulator for reduced-precision types; double stays double.
template <typename T>
using AccType = std::conditional_t<std::is_same_v<T, double>, double, float>;

// A [rows, d] view whose last dimension is contiguous (rows may be strided).
inline at::Tensor RowMajor2d(const at::Tensor& t, const char* op, const char* name) {
  TORCH_CHECK(t.dim() == 2, op, ": ", name, " must be 2-D [rows, d], got ", t.sizes());
  return t.stride(1) == 1 ? t : t.contiguous();
}

inline at::Tensor IndexVector(const at::Tensor& t, const char* op, const char* name,
                              const at::Tensor& like) {
  TORCH_CHECK(t.dim() == 1, op, ": ", name, " must be 1-D, got ", t.sizes());
  TORCH_CHECK(t.scalar_type() == at::kLong, op, ": ", name, " must be int64, got ",
              t.scalar_type());
  TORCH_CHECK(t.device() == like.device(), op, ": ", name, " is on ", t.device(),
              " but the data is on ", like.device());
  return t.contiguous();
}

inline cuda::DType ToCudaDType(at::ScalarType type, const char* op) {
  switch (type) {
    case at::kFloat:
      return cuda::DType::kFloat32;
    case at::kHalf:
      return cuda::DType::kFloat16;
    case at::kBFloat16:
      return cuda::DType::kBFloat16;
    default:
      TORCH_CHECK(false, op, ": dtype ", type, " is not supported on CUDA");
  }
}

inline void CheckLaunch(const char* op, const char* error) {
  TORCH_CHECK(error == nullptr || error[0] == '\0', op, ": CUDA launch failed: ", error);
}

inline void* StreamFor(const at::Tensor& t) { return cuda::CurrentStream(t.device().index()); }

// Runs row_fn(r) for every r in [0, rows) on the intra-op thread pool; `work_per_row` sizes the
// grain so that tiny ops stay on one thread.
template <typename F>
void ParallelRows(int64_t rows, int64_t work_per_row, const F& row_fn) {
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, work_per_row));
  at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) row_fn(r);
  });
}

}  // namespace longqa::kernels
