// The integer GEMM under Int8Linear: u8 activations times s8 weights, the int32 sums returned as
// fp32 (exact below 2^24). Int8Linear does the rest (each row's grid, the weights' row scales,
// the bias).
//
// Two backends, one chosen at build time (CMake's LONGQA_ONEDNN_INT8):
// - oneDNN's matmul called directly (Debian's libdnnl, the library Debian's LibTorch links): the
//   weights reordered once into the layout its brgemm kernels read, the activations' u8 rows
//   handed over as they are. Measured at MiniLM's shapes (1,380 rows, 2 threads, Zen 4): the GEMM
//   850-915 GOP/s, where LibTorch's dynamic-quantised linear ran the whole layer at 550-660 (its
//   own min/max and quantisation passes over fp32 copies, and its dispatch).
// - LibTorch's quantized engine (a LibTorch that bundles its own oneDNN, such as the CUDA build's
//   pip wheel, where Debian's libdnnl must not be linked beside it): the u8 values as floats
//   through its dynamic linear, whose per-tensor grid of [0, top] with scale 1 gives the same
//   integers back.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>

namespace longqa {

class Int8Gemm {
 public:
  // weight [out, in] int8 (at::kChar) on the CPU; `seven_bit_activations`: the activations use
  // 0..127 only (Int8ActivationsUse7Bits).
  Int8Gemm(const at::Tensor& weight, bool seven_bit_activations);
  ~Int8Gemm();
  Int8Gemm(Int8Gemm&&) noexcept;
  Int8Gemm& operator=(Int8Gemm&&) noexcept;

  // activations [m, in] uint8 (at::kByte), contiguous → [m, out] fp32: activations · weight^T.
  at::Tensor Run(const at::Tensor& activations) const;

  // Whether this build's backend can run on this machine.
  static bool Available();
  // "onednn" or "libtorch": which backend this build has (tests and logs).
  static const char* Backend();

 private:
  struct Impl;
  std::unique_ptr<const Impl> impl_;
};

}  // namespace longqa
