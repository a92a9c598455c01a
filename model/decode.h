// Natural-Questions-style decoding of one request's head outputs: the answer type, the best
// paragraph (long answer), the best short spans inside it, and their byte spans in the text.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "model/document.h"

namespace longqa {

// In the order of the answer-type head and of the API's AnswerType enum.
enum class AnswerType { kNoAnswer = 0, kYes = 1, kNo = 2, kShort = 3, kLongOnly = 4 };

struct DecodeOptions {
  int64_t max_answer_tokens = 30;  // longest short answer, in tokens
  int64_t n_best = 1;              // short candidates returned
  // Added to the NO_ANSWER logit before the type is chosen. Unset: the model's default
  // (config.json null_threshold), which the Engine fills in; DecodeAnswer reads unset as 0.
  std::optional<float> null_threshold;
  // config.json answer_score "type+long": best_answer_score adds the best paragraph's long score
  // to the best answer-type logit, so a question the model finds no paragraph for leans to
  // NO_ANSWER (docs/model-format.md). False: the answer-type logit alone.
  bool add_long_score = false;
};

struct AnswerSpan {
  int64_t paragraph_index = 0;
  int64_t byte_begin = 0;
  int64_t byte_end = 0;
  float score = 0.0f;
};

struct QaAnswer {
  AnswerType type = AnswerType::kNoAnswer;
  bool has_long_answer = false;
  AnswerSpan long_answer;
  std::vector<AnswerSpan> short_answers;  // best first, all inside long_answer's paragraph
  float no_answer_score = 0.0f;           // the NO_ANSWER logit of the type head
  // The largest of the other four type logits, plus the long answer's score with add_long_score.
  float best_answer_score = 0.0f;
  std::array<float, 5> type_probabilities{};
  // The closest call made, in logits: the smallest gap between a choice the answer rests on (the
  // answer type, the paragraph, the best short span) and its runner-up. Infinity where nothing was
  // close (a single paragraph, a single span). Checked int8 re-runs answers below a margin in fp32.
  float decision_margin = std::numeric_limits<float>::infinity();
  bool question_truncated = false;
  int64_t question_tokens = 0;
  int64_t document_tokens = 0;
  int64_t windows = 0;
};

// One window's span logits (qa_format squad): start[0] / end[0] are its CLS; entries 1.. are
// the document tokens context_begin, context_begin + 1, ... that the window holds.
struct WindowLogits {
  int64_t context_begin = 0;
  std::vector<float> start, end;
};

// Head outputs of one request, per context token (the document's tokens).
struct RequestLogits {
  std::array<float, 5> type_logits{};
  std::vector<float> start, end, long_score;
  std::vector<WindowLogits> windows;  // qa_format squad only
};

// Chooses the answer (and its decision_margin). The long answer is the non-empty paragraph with the
// best long score. Short candidates: for every start token in that paragraph, the best end at or
// after it within max_answer_tokens; ranked by start + end logit. A short answer never starts or
// ends inside a word (between two ASCII letters/digits), so subword pieces cannot cut words, and
// never crosses a table cell border (a `|` with a blank or the line's edge beside it, on a line
// that starts with `|`) or a table row's end. Spans are trimmed of surrounding ASCII whitespace
// (pieces carry their leading space), of trailing . , ; : ! ? (a piece may glue a word to the
// full stop) and of a bracket or backtick at either end that the span does not pair ("warning)"
// from "(warning)"; "f(x)" and "`make test`" stay whole), so they never split a UTF-8 character.
// Spans ranked best first: the best one's lead over the first with other bytes (infinity: none).
float SpanMargin(const std::vector<AnswerSpan>& ranked);

QaAnswer DecodeAnswer(const RequestLogits& logits, const TokenizedDocument& doc,
                      std::string_view text, const DecodeOptions& options);

}  // namespace longqa
