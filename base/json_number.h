// Numbers from JSON files users bring (config.json, tokenizer.json), read without undefined
// behaviour: nlohmann::json's get<int>() on 1e30 or get<float>() on 1e300 is a plain static_cast,
// undefined when the value does not fit (the fuzzer found it: tests/fuzz). These refuse instead.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>

namespace longqa {

// True, with *out set, when `value` is a JSON integer (not 3.0) that T holds; bool is not a
// number here.
template <typename T>
bool JsonInteger(const nlohmann::json& value, T* out) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<T>::max())) return false;
    *out = static_cast<T>(v);
    return true;
  }
  if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
      if (v < 0 || static_cast<uint64_t>(v) > std::numeric_limits<T>::max()) return false;
    } else {
      if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) return false;
    }
    *out = static_cast<T>(v);
    return true;
  }
  return false;
}

// True, with *out set, when `value` is a JSON number that T (float or double) holds finitely.
template <typename T>
bool JsonFloat(const nlohmann::json& value, T* out) {
  static_assert(std::is_floating_point_v<T>);
  if (!value.is_number()) return false;
  const double v = value.get<double>();
  if (!std::isfinite(v) || std::fabs(v) > static_cast<double>(std::numeric_limits<T>::max())) {
    return false;
  }
  *out = static_cast<T>(v);
  return true;
}

}  // namespace longqa
