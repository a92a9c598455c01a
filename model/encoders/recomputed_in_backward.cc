#include "model/encoders/recomputed_in_backward.h"

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <torch/autograd.h>

#include <utility>

namespace longqa {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Carries fn from forward to backward in the context's saved data.
struct FunctionHolder : torch::CustomClassHolder {
  explicit FunctionHolder(RecomputableFunction f) : fn(std::move(f)) {}
  RecomputableFunction fn;
};

struct RecomputeFunction : public torch::autograd::Function<RecomputeFunction> {
  // inputs[0] is an anchor that requires grad, so that the outputs do even when no real input
  // does (a first layer over frozen embeddings): otherwise backward would never reach fn's
  // weights.
  static variable_list forward(AutogradContext* ctx, RecomputableFunction fn,
                               at::TensorList inputs) {
    ctx->save_for_backward(inputs.vec());
    auto holder = c10::make_intrusive<FunctionHolder>(std::move(fn));
    ctx->saved_data["fn"] = at::IValue::make_capsule(holder);
    std::vector<at::Tensor> real(inputs.begin() + 1, inputs.end());
    return holder->fn(real);  // autograd is off inside a custom function's forward
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto holder =
        c10::static_intrusive_pointer_cast<FunctionHolder>(ctx->saved_data["fn"].toCapsule());
    const variable_list saved = ctx->get_saved_variables();
    std::vector<at::Tensor> inputs;
    for (size_t i = 1; i < saved.size(); ++i) {
      inputs.push_back(saved[i].detach().requires_grad_(saved[i].requires_grad()));
    }
    variable_list outputs;
    {
      const at::AutoGradMode grad(true);
      outputs = holder->fn(inputs);
    }
    variable_list roots, grads;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].requires_grad() && grad_outputs[i].defined()) {
        roots.push_back(outputs[i]);
        grads.push_back(grad_outputs[i]);
      }
    }
    if (!roots.empty()) torch::autograd::backward(roots, grads);
    variable_list result = {at::Tensor(), at::zeros_like(saved[0])};  // fn, anchor
    for (const at::Tensor& in : inputs) {
      result.push_back(in.requires_grad() ? in.grad() : at::Tensor());
    }
    return result;
  }
};

}  // namespace

std::vector<at::Tensor> RecomputedInBackward(RecomputableFunction fn,
                                             const std::vector<at::Tensor>& inputs) {
  if (!at::GradMode::is_enabled()) return fn(inputs);
  std::vector<at::Tensor> with_anchor = {at::zeros({}, at::kFloat).requires_grad_(true)};
  with_anchor.insert(with_anchor.end(), inputs.begin(), inputs.end());
  return RecomputeFunction::apply(std::move(fn), at::TensorList(with_anchor));
}

}  // namespace longqa
