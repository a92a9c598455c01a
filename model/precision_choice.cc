#include "model/precision_choice.h"

#include "model/compute_info.h"

namespace longqa {

PrecisionChoice ChoosePrecision(const std::string& model_default, bool cuda,
                                const std::string& cpu_isa, bool int8_available) {
  const std::string wanted = "the model's default_precision " + model_default;
  const std::string device = cuda ? "the GPU" : "this CPU (" + cpu_isa + ")";
  const auto parsed = ParsePrecision(model_default);
  if (!parsed || *parsed == Precision::kFp32) return {Precision::kFp32, wanted};
  if (*parsed == Precision::kBf16) {
    if (cuda || Bf16Warning(cpu_isa).empty()) return {Precision::kBf16, wanted + " on " + device};
    return {Precision::kFp32, wanted + ", but " + device + " has no bf16 instructions"};
  }
  if (!cuda && int8_available) return {Precision::kInt8, wanted + " on " + device};
  return {Precision::kFp32,
          wanted + ", but " + (cuda ? "int8 runs on the CPU only" : "this LibTorch has no int8")};
}

}  // namespace longqa
