#include "model/encoders/trainable_ops.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include "kernels/ops.h"

namespace longqa {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct GatherRowsFunction : public torch::autograd::Function<GatherRowsFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& src, const at::Tensor& index) {
    ctx->save_for_backward({index});
    ctx->saved_data["rows"] = src.size(0);
    return kernels::GatherRows(src, index);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const at::Tensor index = ctx->get_saved_variables()[0];
    const at::Tensor& grad = grad_outputs[0];
    const at::Tensor valid = (index >= 0).nonzero().flatten();
    at::Tensor grad_src =
        at::zeros({ctx->saved_data["rows"].toInt(), grad.size(1)}, grad.options());
    grad_src.index_add_(0, index.index_select(0, valid), grad.index_select(0, valid));
    return {grad_src, at::Tensor()};
  }
};

struct OverlapMergeFunction : public torch::autograd::Function<OverlapMergeFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& src, const at::Tensor& offsets,
                            const at::Tensor& sources) {
    ctx->save_for_backward({offsets, sources});
    ctx->saved_data["rows"] = src.size(0);
    return kernels::OverlapMerge(src, offsets, sources);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& offsets = saved[0];
    const at::Tensor& sources = saved[1];
    const at::Tensor& grad = grad_outputs[0];
    const at::Tensor counts =
        offsets.narrow(0, 1, offsets.size(0) - 1) - offsets.narrow(0, 0, offsets.size(0) - 1);
    // The output row of every source entry, and its share 1/count.
    const at::Tensor row_of =
        at::repeat_interleave(at::arange(counts.size(0), counts.options()), counts);
    const at::Tensor share =
        (1.0 / counts.clamp_min(1).to(grad.scalar_type())).index_select(0, row_of);
    at::Tensor grad_src =
        at::zeros({ctx->saved_data["rows"].toInt(), grad.size(1)}, grad.options());
    grad_src.index_add_(0, sources, grad.index_select(0, row_of) * share.unsqueeze(1));
    return {grad_src, at::Tensor(), at::Tensor()};
  }
};

struct RelativeLabelGatherFunction : public torch::autograd::Function<RelativeLabelGatherFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& qa, const at::Tensor& labels) {
    ctx->save_for_backward({labels});
    ctx->saved_data["shape"] = qa.sizes().vec();
    return kernels::RelativeLabelGather(qa, labels);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const at::Tensor labels = ctx->get_saved_variables()[0];
    const auto shape = ctx->saved_data["shape"].toIntVector();
    const int64_t rows = shape[0], heads = shape[1];
    const at::Tensor& grad = grad_outputs[0];  // [rows, heads, slots]
    const int64_t period = labels.size(0);
    // The periodic table expanded to every row; label -1 contributes nothing.
    const at::Tensor full = labels.repeat({(rows + period - 1) / period, 1}).narrow(0, 0, rows);
    const at::Tensor index = full.clamp_min(0).unsqueeze(1).expand({rows, heads, full.size(1)});
    const at::Tensor masked = grad * (full >= 0).unsqueeze(1).to(grad.scalar_type());
    at::Tensor grad_qa = at::zeros(shape, grad.options());
    grad_qa.scatter_add_(2, index, masked);
    return {grad_qa, at::Tensor()};
  }
};

}  // namespace

namespace {
bool NeedsGrad(const at::Tensor& t) { return at::GradMode::is_enabled() && t.requires_grad(); }
}  // namespace

at::Tensor GatherRowsTrainable(const at::Tensor& src, const at::Tensor& index) {
  if (!NeedsGrad(src)) return kernels::GatherRows(src, index);
  return GatherRowsFunction::apply(src, index);
}

at::Tensor OverlapMergeTrainable(const at::Tensor& src, const at::Tensor& offsets,
                                 const at::Tensor& sources) {
  if (!NeedsGrad(src)) return kernels::OverlapMerge(src, offsets, sources);
  return OverlapMergeFunction::apply(src, offsets, sources);
}

at::Tensor RelativeLabelGatherTrainable(const at::Tensor& qa, const at::Tensor& labels) {
  if (!NeedsGrad(qa)) return kernels::RelativeLabelGather(qa, labels);
  return RelativeLabelGatherFunction::apply(qa, labels);
}

}  // namespace longqa
