// Rounding a weight matrix to s8 with its error fed forward through the inputs' second moments
// (GPTQ: Frantar et al. 2022, "Accurate post-training quantization for generative pre-trained
// transformers", Algorithm 1 with its lazy blocks): columns are rounded one at a time and each
// column's rounding error is compensated on the columns not yet rounded, in proportion to how the
// calibration inputs of those columns correlate with it, so that x W^T keeps its value on inputs
// like the calibration's rather than each weight its own. Same grid as plain rounding (one scale
// per output row, -127..127): only which grid point each weight takes changes.
//
// Measured in the simulation of bench/results/int8_fidelity/ (models/demo, calibration and scoring
// on different documents): the final states' error from the s8 weights alone 0.0154 → 0.0080.
#pragma once

#include <ATen/core/Tensor.h>

namespace longqa {

// weight [out, in] (any float type), row_scale [out] (each row's grid step), second_moment
// [in, in]: the sum of x xᵀ over calibration input rows (fp64 preferred). Returns [out, in] int8
// (at::kChar) on the grid of row_scale.
at::Tensor GptqRoundRows(const at::Tensor& weight, const at::Tensor& row_scale,
                         const at::Tensor& second_moment);

}  // namespace longqa
