#include "model/encoders/int8_linear.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/quantized/PackedParams.h>

#include <algorithm>
#include <stdexcept>

namespace longqa {
namespace {

using PackFn = c10::intrusive_ptr<LinearPackedParamsBase>(at::Tensor, c10::optional<at::Tensor>);

}  // namespace

bool Int8LinearAvailable() {
  const auto& engines = at::globalContext().supportedQEngines();
  return std::find(engines.begin(), engines.end(), at::QEngine::ONEDNN) != engines.end();
}

Int8Linear::Int8Linear(const at::Tensor& weight, const at::Tensor& bias) {
  if (!Int8LinearAvailable()) {
    throw std::runtime_error(
        "int8 needs LibTorch's oneDNN quantized engine, which this build lacks");
  }
  at::globalContext().setQEngine(at::QEngine::ONEDNN);
  const at::Tensor w = weight.detach().to(at::kFloat).contiguous();
  // Symmetric, one scale for the whole weight (as PyTorch's and ONNX Runtime's dynamic
  // quantisation do by default): the largest magnitude maps to 127. Per-channel scales would be
  // finer, but LibTorch 1.13's oneDNN engine computes them wrong (11% off on a random 96x80
  // weight, per-tensor 0.4%).
  const double scale = std::max(w.abs().max().item<double>(), 1e-12) / 127.0;
  quantized_ = at::quantize_per_tensor(w, scale, 0, at::kQInt8);
  static const auto pack = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("quantized::linear_prepack", "")
                               .typed<PackFn>();
  packed_ = pack.call(quantized_, bias.detach().to(at::kFloat).contiguous());
}

Int8Linear::~Int8Linear() = default;
Int8Linear::Int8Linear(Int8Linear&&) noexcept = default;
Int8Linear& Int8Linear::operator=(Int8Linear&&) noexcept = default;

at::Tensor Int8Linear::Forward(const at::Tensor& x) const {
  const int64_t in = x.size(-1);
  std::vector<int64_t> shape = x.sizes().vec();
  at::Tensor y = packed_->apply_dynamic(x.reshape({-1, in}).contiguous(), /*reduce_range=*/false);
  shape.back() = y.size(-1);
  return y.view(shape);
}

}  // namespace longqa
