#include "model/precision_choice.h"

#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "model/compute_info.h"

namespace longqa {

PrecisionChoice ChoosePrecision(const std::string& model_default, bool cuda,
                                const std::string& cpu_isa, bool int8_available) {
  const std::string wanted = "the model's default_precision " + model_default;
  const std::string device = cuda ? "the GPU" : "this CPU (" + cpu_isa + ")";
  // Why each earlier preference was passed over, for the reason line.
  std::vector<std::string> declined;
  auto chosen = [&](Precision p) {
    if (declined.empty()) return PrecisionChoice{p, wanted + " on " + device};
    return PrecisionChoice{p, wanted + ": " + PrecisionName(p) + " on " + device +
                                  " (passed over: " + absl::StrJoin(declined, "; ") + ")"};
  };
  for (const absl::string_view name : absl::StrSplit(model_default, ',')) {
    const auto parsed = ParsePrecision(std::string(name));
    if (!parsed || *parsed == Precision::kFp32) break;  // (ValidateConfig refuses other names)
    if (*parsed == Precision::kBf16) {
      if (cuda || Bf16Warning(cpu_isa).empty()) return chosen(Precision::kBf16);
      declined.push_back("no bf16 instructions");
    } else {
      if (!cuda && int8_available) return chosen(Precision::kInt8);
      declined.push_back(cuda ? "int8 runs on the CPU only" : "this LibTorch has no int8");
    }
  }
  if (declined.empty()) return {Precision::kFp32, wanted};
  return {Precision::kFp32,
          wanted + ", but " + device + " cannot: " + absl::StrJoin(declined, "; ")};
}

}  // namespace longqa
