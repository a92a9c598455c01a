// Autograd for the kernels, for training (the demo-model trainer): the forward pass runs the same
// kernels as inference; the backward passes are written with LibTorch ops.
//   gather_rows:           grad_src[index[r]] += grad_out[r]          (index_add; -1 rows skipped)
//   overlap_merge:         grad_src[sources[s]] += grad_out[row(s)] / count(row(s))
//   relative_label_gather: grad_qa[r, h, label(r, s)] += grad_out[r, h, s]   (scatter_add)
// Index arguments get no gradient. Without grad mode or an input that requires grad they call the
// kernel directly, so the encoders use them always: inference pays nothing for trainability.
#pragma once

#include <ATen/core/Tensor.h>

namespace longqa {

at::Tensor GatherRowsTrainable(const at::Tensor& src, const at::Tensor& index);
at::Tensor OverlapMergeTrainable(const at::Tensor& src, const at::Tensor& offsets,
                                 const at::Tensor& sources);
at::Tensor RelativeLabelGatherTrainable(const at::Tensor& qa, const at::Tensor& labels);

}  // namespace longqa
