// Which arithmetic a model is served in when the operator leaves --precision at "auto": the model
// folder's default_precision (config.json, set when the model was shipped, after its answers at
// that precision were measured against fp32 on its dev set) where the device runs it natively,
// else fp32. default_precision may list preferences in order ("bf16,int8": bf16 where native,
// else int8 where this LibTorch has it, else fp32). bf16 is native on CUDA and on CPUs with
// AVX512_BF16 or AMX (elsewhere oneDNN emulates it, slower than fp32); int8 on a CPU whose LibTorch
// has the quantized engine.
#pragma once

#include <string>

#include "model/encoders/precision.h"

namespace longqa {

struct PrecisionChoice {
  Precision precision = Precision::kFp32;
  std::string reason;  // one line for the server's log, e.g. "the model's default_precision ..."
};

// `model_default`: config.json's default_precision ("fp32", "bf16", "int8" or a comma-separated
// list of them); `cpu_isa`:
// ComputeInfo::isa.
PrecisionChoice ChoosePrecision(const std::string& model_default, bool cuda,
                                const std::string& cpu_isa, bool int8_available);

}  // namespace longqa
