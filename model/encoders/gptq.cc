#include "model/encoders/gptq.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace longqa {
namespace {

// Columns rounded between the updates of the rest (the paper's lazy batches: the updates of the
// columns after a block are one GEMM, not one rank-1 update per column).
constexpr int64_t kBlockColumns = 128;

// A small multiple of the mean diagonal added to the second moments, as the paper's "dampening":
// keeps the Cholesky factorisation defined when inputs are collinear or a column never varies.
constexpr double kDamping = 0.01;

at::Tensor Round(const at::Tensor& column, const at::Tensor& scale) {
  return at::round(column / scale).clamp(-127, 127);
}

}  // namespace

at::Tensor GptqRoundRows(const at::Tensor& weight, const at::Tensor& row_scale,
                         const at::Tensor& second_moment) {
  const int64_t in = weight.size(1);
  at::Tensor w = weight.detach().to(at::kDouble).clone();
  const at::Tensor scale = row_scale.detach().to(at::kDouble);
  at::Tensor h = second_moment.detach().to(at::kDouble).clone();
  // A column no calibration input ever set carries no information: its weights are rounded
  // plainly (unit second moment, nothing correlated with it).
  const at::Tensor dead = h.diagonal() == 0;
  h.diagonal().masked_fill_(dead, 1.0);
  h.diagonal().add_(kDamping * h.diagonal().mean().item<double>());
  // The upper Cholesky factor of H⁻¹: row j holds how column j's error spreads over the columns
  // after it (the paper's reformulation; no inverse updated column by column).
  const at::Tensor inverse_factor =
      at::linalg_cholesky(at::cholesky_inverse(at::linalg_cholesky(h)), /*upper=*/true);
  at::Tensor q = at::empty_like(w);
  for (int64_t begin = 0; begin < in; begin += kBlockColumns) {
    const int64_t end = std::min(in, begin + kBlockColumns);
    at::Tensor block = w.slice(1, begin, end).clone();
    at::Tensor errors = at::empty_like(block);
    const at::Tensor factor = inverse_factor.slice(0, begin, end).slice(1, begin, end);
    for (int64_t j = 0; j < end - begin; ++j) {
      const at::Tensor column = block.select(1, j);
      const at::Tensor rounded = Round(column, scale);
      q.select(1, begin + j).copy_(rounded);
      const at::Tensor error = (column - rounded * scale) / factor[j][j];
      errors.select(1, j).copy_(error);
      block.slice(1, j + 1).sub_(at::outer(error, factor[j].slice(0, j + 1)));
    }
    if (end < in) {
      w.slice(1, end).sub_(at::matmul(errors, inverse_factor.slice(0, begin, end).slice(1, end)));
    }
  }
  return q.to(at::kChar).contiguous();
}

}  // namespace longqa
