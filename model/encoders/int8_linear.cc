#include "model/encoders/int8_linear.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/quantized/PackedParams.h>
#include <cpuid.h>

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

bool Int8ActivationsUse7Bits() {
  static const bool reduce = [] {
    // Raw CPUID bits, not __builtin_cpu_supports: Clang 14 (the sanitizer and fuzz builds)
    // rejects "avxvnni" at compile time. AVX512_VNNI: leaf 7 sub-leaf 0, ECX bit 11; AVX-VNNI:
    // leaf 7 sub-leaf 1, EAX bit 4.
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool avx512_vnni =
        __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 11)) != 0;
    const bool avx_vnni =
        __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 && (eax & (1u << 4)) != 0;
    return !avx512_vnni && !avx_vnni;
  }();
  return reduce;
}

Int8Linear::Int8Linear(const at::Tensor& weight, const at::Tensor& bias) {
  if (!Int8LinearAvailable()) {
    throw std::runtime_error(
        "int8 needs LibTorch's oneDNN quantized engine, which this build lacks");
  }
  at::globalContext().setQEngine(at::QEngine::ONEDNN);
  const at::Tensor w = weight.detach().to(at::kFloat).contiguous();
  // Symmetric, one scale per output row: each row's largest magnitude maps to 127. LibTorch 1.13's
  // oneDNN engine computes per-channel quantised weights wrong (11% off on a random 96x80 weight),
  // so the rows are brought to one range first (divided by their scales), quantised per tensor
  // with scale 1, and the GEMM's output rows are multiplied back: y = (x Wq^T) * s + b.
  row_scale_ = w.abs().amax(1).clamp_min(1e-12) / 127.0;
  quantized_ = at::quantize_per_tensor(w / row_scale_.unsqueeze(1), 1.0, 0, at::kQInt8);
  bias_ = bias.detach().to(at::kFloat).contiguous();
  static const auto pack = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("quantized::linear_prepack", "")
                               .typed<PackFn>();
  packed_ = pack.call(quantized_, c10::nullopt);
}

Int8Linear::~Int8Linear() = default;
Int8Linear::Int8Linear(Int8Linear&&) noexcept = default;
Int8Linear& Int8Linear::operator=(Int8Linear&&) noexcept = default;

at::Tensor Int8Linear::dequantized_weight() const {
  return quantized_.dequantize() * row_scale_.unsqueeze(1);
}

at::Tensor Int8Linear::Forward(const at::Tensor& x) const {
  const int64_t in = x.size(-1);
  std::vector<int64_t> shape = x.sizes().vec();
  at::Tensor y = packed_->apply_dynamic(x.reshape({-1, in}).contiguous(),
                                        /*reduce_range=*/Int8ActivationsUse7Bits());
  at::addcmul_out(y, bias_, y, row_scale_);  // the rows' scales back, then the bias; in place
  shape.back() = y.size(-1);
  return y.view(shape);
}

}  // namespace longqa
