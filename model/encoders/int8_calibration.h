// Calibration of the int8 dense layers: what each layer's input looked like on calibration text,
// recorded while the model runs it in fp32, then handed to the int8 layers as they are built
// (Int8Linear: the widest input columns in fp32, the weights rounded by GPTQ).
//
// Both hand-offs go through the calling thread's state rather than every encoder's constructor:
// a dense layer is named by its place in the model (e.g. "encoder.layer.3.ffn2"), records under
// that name while a recording is alive on its thread, and finds its statistics under that name
// while a calibration is in use on the thread that builds it (Engine does both, at load).
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>

#include "model/encoders/int8_linear.h"

namespace longqa {

// Each named dense layer's input statistics.
using Int8Calibration = std::map<std::string, Int8InputStats>;

// While alive, fp32 dense layers called on this thread add their input rows to `into`.
class Int8CalibrationRecording {
 public:
  explicit Int8CalibrationRecording(Int8Calibration* into);
  ~Int8CalibrationRecording();
  Int8CalibrationRecording(const Int8CalibrationRecording&) = delete;
  Int8CalibrationRecording& operator=(const Int8CalibrationRecording&) = delete;

  // Adds x [..., in] (its rows) to the statistics of `name`, if a recording is alive here.
  static void Record(const std::string& name, const at::Tensor& x);

 private:
  Int8Calibration* previous_;
};

// While alive, int8 dense layers built on this thread take their statistics from `calibration`.
class Int8CalibrationInUse {
 public:
  explicit Int8CalibrationInUse(const Int8Calibration* calibration);
  ~Int8CalibrationInUse();
  Int8CalibrationInUse(const Int8CalibrationInUse&) = delete;
  Int8CalibrationInUse& operator=(const Int8CalibrationInUse&) = delete;

  // The statistics recorded under `name`; null when none is in use or it has none.
  static const Int8InputStats* Find(const std::string& name);

  // How many Find calls on this thread, while this was alive, found statistics, and how many not.
  int found() const { return found_; }
  int missed() const { return missed_; }

 private:
  const Int8Calibration* calibration_;
  Int8CalibrationInUse* previous_;
  int found_ = 0, missed_ = 0;
};

}  // namespace longqa
