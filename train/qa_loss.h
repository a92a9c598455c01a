// The training objective on the heads' logits: cross-entropy on the answer type (5 classes), on
// the long-answer paragraph (softmax over the document's paragraph tokens) and on the short
// answer's start and end (softmax over the gold paragraph's tokens, the range the decoder
// searches), and for ETC models with a supporting-fact head a binary cross-entropy on each
// segment token, 1 for the segments that hold the example's supporting paragraphs (the mean over
// those plus the mean over the others: ETC trains HotpotQA's supporting facts from its globals).
// Each term is the mean over the examples that have such a target; the total is their sum.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "model/qa_model.h"
#include "train/training_example.h"

namespace longqa {

struct QaLossResult {
  at::Tensor total;  // scalar, differentiable
  double type_loss = 0, long_loss = 0, span_loss = 0, supporting_loss = 0;
  // Argmax accuracy on the batch, for the curriculum and the log.
  int64_t examples = 0, type_correct = 0;
  int64_t long_targets = 0, long_correct = 0;
  int64_t span_targets = 0, span_correct = 0;
  // Examples with supporting paragraphs (and a head to score them); right: the best-scored
  // segment is one of theirs. Not part of all_correct, which stays the answer's.
  int64_t supporting_targets = 0, supporting_correct = 0;
  int64_t all_correct = 0;  // type, paragraph and span (where the example has them) all right
};

QaLossResult ComputeQaLoss(const QaLogits& logits,
                           const std::vector<const TrainingExample*>& batch);

}  // namespace longqa
