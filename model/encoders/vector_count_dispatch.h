// The head-width dispatch of the fused CPU attention kernels (avx512_attention_tiles.h,
// avx2_attention_tiles.h): a kernel's accumulators are registers, so its vectors per head must be
// a compile-time constant; this turns the runtime count into one.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <type_traits>

namespace longqa {

// Calls f(std::integral_constant<int, N>{}) for N = n, 1 <= n <= Max; throws std::logic_error
// with `what` for any other n.
template <int Max, typename F>
void ForVectorCount(int64_t n, const char* what, F&& f) {
  if constexpr (Max >= 1) {
    if (n == Max) return f(std::integral_constant<int, Max>{});
    return ForVectorCount<Max - 1>(n, what, f);
  } else {
    throw std::logic_error(what);
  }
}

}  // namespace longqa
