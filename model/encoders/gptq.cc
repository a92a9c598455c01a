#include "model/encoders/gptq.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

namespace longqa {
namespace {

// Columns rounded between the updates of the rest (the paper's lazy batches: the updates of the
// columns after a block are one GEMM, not one rank-1 update per column).
constexpr int64_t kBlockColumns = 128;

// A small multiple of the mean diagonal added to the second moments, as the paper's "dampening":
// keeps the Cholesky factorisation defined when inputs are collinear or a column never varies.
constexpr double kDamping = 0.01;

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
  const int64_t out = w.size(0);
  at::Tensor q = at::empty({out, in}, at::kDouble);
  const double* scales = scale.contiguous().data_ptr<double>();
  for (int64_t begin = 0; begin < in; begin += kBlockColumns) {
    const int64_t end = std::min(in, begin + kBlockColumns), width = end - begin;
    // The block's columns, each row's error fed to the block's later columns in plain loops
    // (a LibTorch call per column cost most of the time at FFN widths: 1,536 columns).
    at::Tensor block = w.slice(1, begin, end).contiguous();
    const at::Tensor factor = inverse_factor.slice(0, begin, end).slice(1, begin, end).contiguous();
    at::Tensor errors = at::empty({out, width}, at::kDouble);
    double* b = block.data_ptr<double>();
    const double* f = factor.data_ptr<double>();
    double* e = errors.data_ptr<double>();
    double* rounded = q.data_ptr<double>();
    for (int64_t r = 0; r < out; ++r) {
      double* row = b + r * width;
      for (int64_t j = 0; j < width; ++j) {
        const double level = std::clamp(std::nearbyint(row[j] / scales[r]), -127.0, 127.0);
        rounded[r * in + begin + j] = level;
        const double error = (row[j] - level * scales[r]) / f[j * width + j];
        e[r * width + j] = error;
        for (int64_t c = j + 1; c < width; ++c) row[c] -= error * f[j * width + c];
      }
    }
    if (end < in) {
      w.slice(1, end).sub_(at::matmul(errors, inverse_factor.slice(0, begin, end).slice(1, end)));
    }
  }
  return q.to(at::kChar).contiguous();
}

}  // namespace longqa
