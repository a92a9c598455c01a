// The arithmetic the encoder layers run in, chosen when a model is loaded (--precision).
#pragma once

#include <optional>
#include <string>

namespace longqa {

enum class Precision {
  kFp32,  // the weights as stored, in fp32
  kInt8,  // dense layers with int8 weights and dynamically quantised activations (CPU)
  kBf16,  // dense layers and attention GEMMs in bf16 (fp32 accumulation); residuals, LayerNorm
          // and softmax sums in fp32
};

inline std::optional<Precision> ParsePrecision(const std::string& name) {
  if (name == "fp32") return Precision::kFp32;
  if (name == "int8") return Precision::kInt8;
  if (name == "bf16") return Precision::kBf16;
  return std::nullopt;
}

inline const char* PrecisionName(Precision p) {
  switch (p) {
    case Precision::kInt8:
      return "int8";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp32:
      break;
  }
  return "fp32";
}

}  // namespace longqa
