#include "model/encoders/int8_calibration.h"

#include <ATen/ATen.h>

namespace longqa {
namespace {

thread_local Int8Calibration* recording = nullptr;
thread_local Int8CalibrationInUse* in_use = nullptr;

}  // namespace

Int8CalibrationRecording::Int8CalibrationRecording(Int8Calibration* into) : previous_(recording) {
  recording = into;
}
Int8CalibrationRecording::~Int8CalibrationRecording() { recording = previous_; }

void Int8CalibrationRecording::Record(const std::string& name, const at::Tensor& x) {
  if (recording == nullptr || name.empty()) return;
  // Summed in fp32 (a BERT-base FFN input's second moments: 38 MB, 75 in fp64); GPTQ converts
  // them to fp64.
  const at::Tensor rows = x.detach().reshape({-1, x.size(-1)}).to(at::kFloat);
  Int8InputStats& stats = (*recording)[name];
  const at::Tensor column_max = rows.abs().amax(0);
  if (!stats.second_moment.defined()) {
    stats.second_moment = at::matmul(rows.t(), rows);
    stats.column_max = column_max;
  } else {
    stats.second_moment.addmm_(rows.t(), rows);
    stats.column_max = at::maximum(stats.column_max, column_max);
  }
}

Int8CalibrationInUse::Int8CalibrationInUse(const Int8Calibration* calibration)
    : calibration_(calibration), previous_(in_use) {
  in_use = this;
}
Int8CalibrationInUse::~Int8CalibrationInUse() { in_use = previous_; }

const Int8InputStats* Int8CalibrationInUse::Find(const std::string& name) {
  if (in_use == nullptr) return nullptr;
  const auto it = in_use->calibration_->find(name);
  if (it == in_use->calibration_->end()) {
    ++in_use->missed_;
    return nullptr;
  }
  ++in_use->found_;
  return &it->second;
}

}  // namespace longqa
