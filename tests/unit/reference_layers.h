// fp64 reference pieces of a post-LN transformer layer, written plainly (per-head loops, explicit
// softmax, LayerNorm and exact GELU) for the encoder tests to compare against.
#pragma once

#include <ATen/ATen.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/format/config.h"
#include "model/format/weights.h"

namespace longqa {

// Where a reduced-precision path rounds (the inputs and outputs of its GEMMs, the softmax's
// output), a reference can round too: Exact for fp32 paths, Bf16 (a round trip through bf16)
// for Precision::kBf16. Everything else stays fp64.
using Rounding = at::Tensor (*)(const at::Tensor&);
inline at::Tensor Exact(const at::Tensor& x) { return x; }
inline at::Tensor Bf16(const at::Tensor& x) { return x.to(at::kBFloat16).to(at::kDouble); }

inline at::Tensor RefFinish(const TensorMap& w, const ModelConfig& c, int64_t layer,
                            const at::Tensor& x, const at::Tensor& context, Rounding r = Exact);

inline at::Tensor W(const TensorMap& w, const std::string& name) {
  return w.at(name).to(at::kDouble);
}

inline at::Tensor RefLayerNorm(const at::Tensor& x, const at::Tensor& g, const at::Tensor& b,
                               double eps) {
  const at::Tensor mean = x.mean(-1, true);
  const at::Tensor var = (x - mean).pow(2).mean(-1, true);
  return (x - mean) / (var + eps).sqrt() * g + b;
}

inline at::Tensor RefLinear(const TensorMap& w, const std::string& name, const at::Tensor& x,
                            Rounding r = Exact) {
  return r(at::matmul(r(x), r(W(w, name + ".weight")).t()) + r(W(w, name + ".bias")));
}

// Where a reduced-precision layer rounds inside attention: LibTorch's path rounds the scores and
// the normalised weights (its GEMMs' operands); the fused CPU kernel (fused_cpu_attention.h), in
// its AVX512_BF16 and AMX forms alike, keeps the scores fp32 and rounds the weights before
// normalising (the dot product's or tile multiply's operand), dividing by the fp32 sum after.
enum class AttentionRounding { kLibTorch, kFusedBf16Weights };

// One post-LN layer on one unpadded sequence x [T, d].
inline at::Tensor RefLayer(const TensorMap& w, const ModelConfig& c, int64_t layer,
                           const at::Tensor& x, Rounding r = Exact,
                           AttentionRounding attention = AttentionRounding::kLibTorch) {
  const std::string s = "encoder.layer." + std::to_string(layer);
  const at::Tensor q = RefLinear(w, s + ".attention.self.query", x, r);
  const at::Tensor k = RefLinear(w, s + ".attention.self.key", x, r);
  const at::Tensor v = RefLinear(w, s + ".attention.self.value", x, r);
  const int64_t dh = c.head_dim();
  const bool libtorch = attention == AttentionRounding::kLibTorch;
  std::vector<at::Tensor> per_head;
  for (int64_t h = 0; h < c.num_heads; ++h) {
    at::Tensor scores =
        at::matmul(q.narrow(1, h * dh, dh), k.narrow(1, h * dh, dh).t()) / std::sqrt(double(dh));
    if (libtorch) scores = r(scores);
    const at::Tensor e = (scores - std::get<0>(scores.max(1, true))).exp();
    const at::Tensor v_h = v.narrow(1, h * dh, dh);
    if (libtorch) {
      per_head.push_back(r(at::matmul(r(e / e.sum(1, true)), v_h)));
    } else {
      per_head.push_back(r(at::matmul(r(e), v_h) / e.sum(1, true)));
    }
  }
  return RefFinish(w, c, layer, x, at::cat(per_head, 1), r);
}

// Output projection, add & norm, GELU FFN, add & norm of one layer, given the attention context.
inline at::Tensor RefFinish(const TensorMap& w, const ModelConfig& c, int64_t layer,
                            const at::Tensor& x, const at::Tensor& context, Rounding r) {
  const std::string s = "encoder.layer." + std::to_string(layer);
  const at::Tensor attn = RefLinear(w, s + ".attention.output.dense", context, r);
  const at::Tensor h1 =
      RefLayerNorm(x + attn, W(w, s + ".attention.output.LayerNorm.weight"),
                   W(w, s + ".attention.output.LayerNorm.bias"), c.layer_norm_eps);
  const at::Tensor inner = RefLinear(w, s + ".intermediate.dense", h1, r);
  const at::Tensor gelu = r(0.5 * inner * (1.0 + (inner / std::sqrt(2.0)).erf()));
  return RefLayerNorm(h1 + RefLinear(w, s + ".output.dense", gelu, r),
                      W(w, s + ".output.LayerNorm.weight"), W(w, s + ".output.LayerNorm.bias"),
                      c.layer_norm_eps);
}

}  // namespace longqa
