// A quick in-process check of a model on gold examples, per question kind, for the trainer's log:
// the answers of the engine compared with the gold spans exactly. (The reported figures come from
// `longqa eval` through a real server; this is the trainer's monitor.)
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/engine.h"
#include "train/training_example.h"

namespace longqa {

struct KindScore {
  int64_t examples = 0;
  int64_t long_right = 0;    // answerable: the gold paragraph; unanswerable: no answer
  int64_t answer_right = 0;  // also the right type and, for short answers, the exact span
};

// Scores keyed by kind, plus "all".
std::map<std::string, KindScore> ScoreExamples(const Engine& engine,
                                               const std::vector<TrainingExample>& examples,
                                               int64_t batch_size);

// One line: "all 0.52/0.41 (200) one_hop 0.80/0.66 (81) ..." (long / answer accuracy, count).
std::string FormatKindScores(const std::map<std::string, KindScore>& scores);

}  // namespace longqa
