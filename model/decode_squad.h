// SQuAD-style extractive decoding (qa_format squad), the rule of transformers' question-answering
// pipeline: in every window, softmax the start and the end logits over the window's CLS and
// context tokens; a span's score is p_start · p_end within one window, at most max_answer_tokens
// long; the best span over all windows wins (the earlier window on a tie), widened to whole
// words (tokenizers' word_to_chars). No answer ("null") scores the smallest CLS·CLS product over
// the windows, as the pipeline's handle_impossible_answer does.
#pragma once

#include <string_view>

#include "model/decode.h"
#include "model/document.h"

namespace longqa {

// The answer in the API's terms: NO_ANSWER exactly when
// log(null) + null_threshold >= log(best span score) (no_answer_score and best_answer_score hold
// those logarithms), else SHORT with the n-best spans (best first, duplicates of a byte span
// dropped) and as long answer the paragraph where the best span starts. Every listed span starts
// in that paragraph (the others are left out), but may run on across a paragraph break: the
// context is one sequence, as in the pipeline (with a random QA head, 7 of 200 of its best spans
// do; qa.proto states the exception). type_probabilities holds the null and best scores
// normalised to sum to 1 (NO_ANSWER and SHORT); decision_margin is in log-probabilities.
QaAnswer DecodeSquadAnswer(const RequestLogits& logits, const TokenizedDocument& doc,
                           std::string_view text, const DecodeOptions& options);

}  // namespace longqa
