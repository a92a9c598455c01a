#include "model/encoders/bf16_products.h"

#include <ATen/ATen.h>

namespace longqa {
namespace {

// Whether a's product takes the fp32 detour.
bool Detour(const at::Tensor& a) {
  return a.is_cpu() && a.scalar_type() == at::kBFloat16 && !CpuBf16GemmSumsInFp32();
}

}  // namespace

bool CpuBf16GemmSumsInFp32() {
  // LibTorch 1.13's condition for oneDNN's bf16 matmul (mkldnn_bf16_device_check).
  static const bool native = [] {
    __builtin_cpu_init();
    return at::globalContext().userEnabledMkldnn() && at::hasMKLDNN() &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq");
  }();
  return native;
}

at::Tensor Bf16SafeBmm(const at::Tensor& a, const at::Tensor& b) {
  if (!Detour(a)) return at::bmm(a, b);
  return at::bmm(a.to(at::kFloat), b.to(at::kFloat)).to(at::kBFloat16);
}

at::Tensor& Bf16SafeBmmOut(at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
  if (!Detour(a)) return at::bmm_out(out, a, b);
  return out.copy_(at::bmm(a.to(at::kFloat), b.to(at::kFloat)));
}

at::Tensor& Bf16SafeBaddbmm_(at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
  if (!Detour(a)) return out.baddbmm_(a, b);
  return out.copy_(at::baddbmm(out.to(at::kFloat), a.to(at::kFloat), b.to(at::kFloat)));
}

}  // namespace longqa
