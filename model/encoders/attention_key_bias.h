// The additive key bias of the fused window attention's forms (fused_cpu_attention.cc,
// fused_cpu_attention_avx2.cc): LibTorch's path adds -1e30 for a padding key (so a window without
// valid keys averages all its values, as there); the keys past t, up to the kernels' padded
// length tp, are -inf, never attended to.
#pragma once

#include <cmath>
#include <cstdint>

namespace longqa {

inline void FillKeyBias(const bool* valid, int64_t t, int64_t tp, float* bias) {
  for (int64_t j = 0; j < t; ++j) bias[j] = valid[j] ? 0.0f : -1e30f;
  for (int64_t j = t; j < tp; ++j) bias[j] = -INFINITY;
}

}  // namespace longqa
