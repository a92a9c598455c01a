// The arithmetic the encoder layers run in, chosen when a model is loaded (--precision).
#pragma once

#include <optional>
#include <string>

namespace longqa {

enum class Precision {
  kFp32,  // the weights as stored, in fp32
  kInt8,  // dense layers with int8 weights and dynamically quantised activations (CPU)
};

inline std::optional<Precision> ParsePrecision(const std::string& name) {
  if (name == "fp32") return Precision::kFp32;
  if (name == "int8") return Precision::kInt8;
  return std::nullopt;
}

inline const char* PrecisionName(Precision p) { return p == Precision::kInt8 ? "int8" : "fp32"; }

}  // namespace longqa
