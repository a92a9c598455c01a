#include "train/curriculum.h"

#include <algorithm>

namespace longqa {

void Curriculum::Record(int64_t all_correct, int64_t examples) {
  recent_.emplace_back(all_correct, examples);
  correct_ += all_correct;
  examples_ += examples;
  // Keep the smallest suffix of steps that still covers the window.
  while (examples_ - recent_.front().second >= options_.window) {
    correct_ -= recent_.front().first;
    examples_ -= recent_.front().second;
    recent_.pop_front();
  }
}

double Curriculum::running_accuracy() const {
  return static_cast<double>(correct_) / static_cast<double>(std::max<int64_t>(1, examples_));
}

Curriculum::Decision Curriculum::Decide(int64_t stage_step, bool last_stage) const {
  if (last_stage) return Decision::kStay;
  if (stage_step >= options_.min_stage_steps && examples_ >= options_.window &&
      running_accuracy() >= options_.advance_accuracy) {
    return Decision::kMastered;
  }
  if (options_.max_stage_steps > 0 && stage_step >= options_.max_stage_steps) {
    return Decision::kTimedOut;
  }
  return Decision::kStay;
}

void Curriculum::Reset() {
  recent_.clear();
  correct_ = examples_ = 0;
}

double LearningRate(int64_t step, int64_t steps, int64_t warmup, double peak) {
  if (step < warmup) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup);
  const int64_t decay_start = steps - steps / 5;
  if (step < decay_start) return peak;
  const double f = static_cast<double>(step - decay_start) / std::max<int64_t>(1, steps / 5);
  return peak * (1.0 - 0.9 * std::min(1.0, f));
}

}  // namespace longqa
