// The curriculum's clock: a stage is mastered when the running training accuracy (examples whose
// type, paragraph and span were all right, over the last `window` examples) reaches a bar after
// a minimum number of steps; a stage may also end after a maximum number of steps. Also the
// learning-rate schedule, which depends on the step alone.
#pragma once

#include <cstdint>
#include <deque>
#include <utility>

namespace longqa {

struct CurriculumOptions {
  double advance_accuracy = 0.85;  // running accuracy that masters a stage
  int64_t window = 400;            // training examples the running accuracy covers
  int64_t min_stage_steps = 200;   // steps in a stage before it can be mastered
  int64_t max_stage_steps = 0;     // steps after which a stage ends anyway (0: never)
};

class Curriculum {
 public:
  enum class Decision { kStay, kMastered, kTimedOut };

  explicit Curriculum(const CurriculumOptions& options) : options_(options) {}

  // Records one step's batch: `all_correct` of `examples` were entirely right.
  void Record(int64_t all_correct, int64_t examples);
  // Running accuracy over the window (0 before any example).
  double running_accuracy() const;
  // Whether the stage ends after `stage_step` steps in it; `last_stage` never ends.
  Decision Decide(int64_t stage_step, bool last_stage) const;
  // Starts the window anew (a new stage).
  void Reset();

 private:
  CurriculumOptions options_;
  std::deque<std::pair<int64_t, int64_t>> recent_;  // (all_correct, examples) per step
  int64_t correct_ = 0, examples_ = 0;
};

// Linear warm-up to `peak`, constant, then a linear decay to 10% of it over the last fifth of
// the run.
double LearningRate(int64_t step, int64_t steps, int64_t warmup, double peak);

}  // namespace longqa
