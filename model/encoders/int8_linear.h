// A Linear layer with int8 weights and dynamically quantised int8 activations (the dynamic
// quantisation ONNX Runtime and PyTorch apply to BERT): weights quantised once (symmetric, s8,
// one scale per output row), each input row (u8) on a grid of its own at every call, the GEMM in
// integers (Int8Gemm: oneDNN), the result back in fp32 with the bias added, and GELU after it
// where asked, each row while it is in cache. CPU only; inference only.
//
// Per-row activations, not the engine's one range per tensor (ONNX Runtime's and PyTorch's
// dynamic default): in models/demo's layers the widest input row's range is 2-9x the median
// row's, and one range for all coarsens every row's grid that much. On its windows (MiniLM, fp32
// reference, 64 windows of the dev set) the final states' relative error was 6.9% per tensor and
// 2.2% per row with 8-bit activations, 13% and 3.5% with 7-bit (bench/results/int8_rows/).
//
// Calibrated (what a calibration run saw at the layer's input, Int8InputStats): the input columns
// of largest magnitude (a trained encoder's outlier features, 4-15x the median column in
// models/demo) stay fp32, their products added in the finishing pass, so that they no longer
// widen every row's grid nor the weights' row scales; and the weights are rounded by GPTQ
// (gptq.h) instead of each to its nearest step. Simulated on models/demo's windows
// (bench/results/int8_fidelity/): the final states' error 0.0235 → 0.0120 (bf16's: 0.0034).
#pragma once

#include <ATen/core/Tensor.h>

#include "model/encoders/int8_gemm.h"

namespace longqa {

// What a calibration run saw at one layer's input.
struct Int8InputStats {
  at::Tensor second_moment;  // [in, in]: the sum of x xᵀ over the calibration rows
  at::Tensor column_max;     // [in] fp32: each input column's largest magnitude
};

// The input columns a calibrated layer keeps in fp32: a few, the features that carry a trained
// encoder's outliers (in the simulation, without GPTQ: 4 columns 0.0170, 8 columns 0.0161).
inline constexpr int64_t kInt8OutlierColumns = 8;

class Int8Linear {
 public:
  // weight [out, in] and bias [out], fp32 on the CPU; `calibration` (may be null: plain rounding,
  // no fp32 columns) as the comment above says.
  Int8Linear(const at::Tensor& weight, const at::Tensor& bias,
             const Int8InputStats* calibration = nullptr);
  ~Int8Linear();
  Int8Linear(Int8Linear&&) noexcept;
  Int8Linear& operator=(Int8Linear&&) noexcept;

  // What follows the affine map: nothing, or GELU (the FFN's first layer).
  enum class Activation { kNone, kGelu };

  // x [..., in] fp32 → [..., out] fp32.
  at::Tensor Forward(const at::Tensor& x, Activation activation = Activation::kNone) const;

  // The weight as the GEMM sees it (dequantised; zero in the fp32 columns), for tests.
  at::Tensor dequantized_weight() const;
  // The input columns kept in fp32 ([k] int64, ascending; empty when not calibrated).
  const at::Tensor& fp32_columns() const { return fp32_columns_; }

 private:
  struct Rounded;  // the weights as rounded, before oneDNN packs them
  Int8Linear(Rounded rounded, const at::Tensor& bias);
  static Rounded Round(const at::Tensor& weight, const Int8InputStats* calibration);

  at::Tensor row_scale_;          // [out] fp32: each output row's scale, applied after the GEMM
  at::Tensor quantized_;          // [out, in] int8: a quarter of the fp32 weight
  Int8Gemm gemm_;                 // its packed copy, which the GEMM reads
  at::Tensor bias_;               // [out] fp32
  at::Tensor weight_row_sum_;     // [out] fp32: the dequantised weight's row sums (rows' minima)
  at::Tensor fp32_columns_;       // [k] int64: the input columns kept in fp32
  at::Tensor fp32_weights_;       // [k, out] fp32: their weights, a row per column
  at::Tensor fp32_column_flags_;  // [in] fp32: 1 in the fp32 columns, else 0 (the row passes')
};

// Whether Int8Linear runs here (Int8Gemm::Available).
bool Int8LinearAvailable();

// Whether the activations are quantised to 7 bits (0..127) instead of 8: on CPUs without VNNI
// (AVX2, AVX-512 before Cascade Lake) oneDNN multiplies u8 by s8 with VPMADDUBSW, whose pairwise
// sums saturate at 32767 (2 × 255 × 127 does not fit; 2 × 127 × 127 does): measured on an AVX2
// EPYC, outputs up to 0.57 off (largest 5.2) with 8 bits. PyTorch's reduce_range, for the same
// reason.
bool Int8ActivationsUse7Bits();

// Tests: Forward's per-row passes in plain C++ (what CPUs without AVX2 run) while true; GELU
// then comes after the last row (GeluInPlace), as on CPUs without the fused ops.
void UsePlainInt8RowPassesForTesting(bool plain);

}  // namespace longqa
