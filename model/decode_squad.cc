#include "model/decode_squad.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace longqa {
namespace {

// Softmax over one window's CLS and context logits, in float as the pipeline's numpy does.
std::vector<float> Softmax(const std::vector<float>& logits) {
  const float max = *std::max_element(logits.begin(), logits.end());
  std::vector<float> p(logits.size());
  float total = 0.0f;
  for (size_t i = 0; i < logits.size(); ++i) total += p[i] = std::exp(logits[i] - max);
  for (float& v : p) v /= total;
  return p;
}

struct Candidate {
  int64_t start_token = 0, end_token = 0;  // document tokens
  float score = 0.0f;
};

}  // namespace

QaAnswer DecodeSquadAnswer(const RequestLogits& logits, const TokenizedDocument& doc,
                           std::string_view /*text*/, const DecodeOptions& options) {
  QaAnswer answer;
  float null_score = std::numeric_limits<float>::infinity();
  const size_t n_best = static_cast<size_t>(std::max<int64_t>(1, options.n_best));
  std::vector<Candidate> candidates;
  // Per window, its best span with other bytes than its own best (decision_margin's runner-up
  // where the best overall is this window's best).
  std::vector<Candidate> alternatives;
  auto bytes = [&](const Candidate& c) {
    return ByteRange{doc.word_spans[c.start_token].first, doc.word_spans[c.end_token].second};
  };
  for (const WindowLogits& window : logits.windows) {
    if (window.start.size() < 2) continue;  // a window without context tokens
    const std::vector<float> p_start = Softmax(window.start);
    const std::vector<float> p_end = Softmax(window.end);
    null_score = std::min(null_score, p_start[0] * p_end[0]);
    // The window's best spans, ranked as the pipeline's argmax over the flattened score matrix:
    // by score, then by start, then by end.
    std::vector<Candidate> own;
    const int64_t n = static_cast<int64_t>(window.start.size());
    for (int64_t s = 1; s < n; ++s) {
      for (int64_t e = s; e < std::min(n, s + options.max_answer_tokens); ++e) {
        own.push_back(
            {window.context_begin + s - 1, window.context_begin + e - 1, p_start[s] * p_end[e]});
      }
    }
    const size_t keep = std::min(n_best, own.size());
    std::partial_sort(own.begin(), own.begin() + keep, own.end(),
                      [](const Candidate& a, const Candidate& b) {
                        if (a.score != b.score) return a.score > b.score;
                        if (a.start_token != b.start_token) return a.start_token < b.start_token;
                        return a.end_token < b.end_token;
                      });
    candidates.insert(candidates.end(), own.begin(), own.begin() + keep);
    const Candidate* alternative = nullptr;
    for (const Candidate& c : own) {
      if (bytes(c) != bytes(own[0]) && (alternative == nullptr || c.score > alternative->score)) {
        alternative = &c;
      }
    }
    if (alternative != nullptr) alternatives.push_back(*alternative);
  }
  // Across windows the earlier window wins a tie (a stable sort, as the pipeline's sorted()).
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.score > b.score; });

  for (const Candidate& c : candidates) {
    const AnswerSpan span{doc.token_paragraph[c.start_token], doc.word_spans[c.start_token].first,
                          doc.word_spans[c.end_token].second, c.score};
    // The n-best list keeps to spans that start in the best one's paragraph (the long answer).
    if (!answer.short_answers.empty() &&
        span.paragraph_index != answer.short_answers[0].paragraph_index) {
      continue;
    }
    const bool seen = std::any_of(
        answer.short_answers.begin(), answer.short_answers.end(), [&](const AnswerSpan& a) {
          return a.byte_begin == span.byte_begin && a.byte_end == span.byte_end;
        });
    if (!seen) answer.short_answers.push_back(span);
    if (answer.short_answers.size() == n_best) break;
  }
  if (answer.short_answers.empty()) {
    answer.short_answers.clear();
    answer.type_probabilities[0] = 1.0f;
    return answer;
  }
  const float best = answer.short_answers[0].score;
  answer.no_answer_score = std::log(null_score);
  answer.best_answer_score = std::log(best);
  // Close calls, in log-probabilities: answer or not, and the best span against the best one
  // with other bytes (spans of equal bytes from two windows are one answer).
  const float null_side = answer.no_answer_score + options.null_threshold.value_or(0.0f);
  answer.decision_margin = std::abs(answer.best_answer_score - null_side);
  const ByteRange best_bytes{answer.short_answers[0].byte_begin, answer.short_answers[0].byte_end};
  float runner_up = 0.0f;
  for (const auto* list : {&candidates, &alternatives}) {
    for (const Candidate& c : *list) {
      if (bytes(c) != best_bytes) runner_up = std::max(runner_up, c.score);
    }
  }
  if (runner_up > 0.0f) {
    answer.decision_margin =
        std::min(answer.decision_margin, answer.best_answer_score - std::log(runner_up));
  }
  answer.type_probabilities[static_cast<int>(AnswerType::kNoAnswer)] =
      null_score / (null_score + best);
  answer.type_probabilities[static_cast<int>(AnswerType::kShort)] = best / (null_score + best);
  if (null_side >= answer.best_answer_score) {
    answer.short_answers.clear();
    return answer;
  }
  answer.type = AnswerType::kShort;
  answer.has_long_answer = true;
  const int64_t paragraph = answer.short_answers[0].paragraph_index;
  answer.long_answer = {paragraph, doc.paragraph_bytes[paragraph].first,
                        doc.paragraph_bytes[paragraph].second, best};
  return answer;
}

}  // namespace longqa
