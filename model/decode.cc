#include "model/decode.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace longqa {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool IsAsciiAlnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// True when byte offset `at` falls inside a word (an ASCII letter or digit on both sides): short
// answers never start or end there, so subword pieces cannot cut a word in half.
bool InsideWord(std::string_view text, int64_t at) {
  return at > 0 && at < static_cast<int64_t>(text.size()) && IsAsciiAlnum(text[at - 1]) &&
         IsAsciiAlnum(text[at]);
}

ByteRange Trim(std::string_view text, ByteRange r) {
  while (r.first < r.second && IsSpace(text[r.first])) ++r.first;
  while (r.second > r.first && IsSpace(text[r.second - 1])) --r.second;
  return r;
}

// A short answer also drops trailing sentence punctuation: a piece such as "08." glues a year to
// the full stop, and no entity answer ends with one.
bool IsTrailingPunctuation(char c) {
  return c == '.' || c == ',' || c == ';' || c == ':' || c == '!' || c == '?';
}

// How many times `c` occurs in the span.
int64_t CountIn(std::string_view text, ByteRange r, char c) {
  return std::count(text.begin() + r.first, text.begin() + r.second, c);
}

// True when the span's byte at `at` (its first or last) is a bracket or backtick the span does
// not close or open itself: "warning)" cut from "`Alert` (warning)", "`container_test.sh" from a
// code span. An answer keeps its own pairs ("f(x)", "`--workers`").
bool UnpairedDelimiter(std::string_view text, ByteRange r, int64_t at) {
  const char c = text[at];
  if (c == '`') return CountIn(text, r, '`') % 2 == 1;
  static constexpr std::string_view kOpen = "([{", kClose = ")]}";
  if (const size_t i = kClose.find(c); i != kClose.npos && at == r.second - 1) {
    return CountIn(text, r, c) > CountIn(text, r, kOpen[i]);
  }
  if (const size_t i = kOpen.find(c); i != kOpen.npos && at == r.first) {
    return CountIn(text, r, c) > CountIn(text, r, kClose[i]);
  }
  return false;
}

// Surrounding whitespace goes in the same loop: a trim can expose a blank ("(warning )").
ByteRange TrimAnswer(std::string_view text, ByteRange r) {
  for (bool trimmed = true; trimmed && r.first < r.second;) {
    trimmed = false;
    const char last = text[r.second - 1];
    if (IsTrailingPunctuation(last) || IsSpace(last) || UnpairedDelimiter(text, r, r.second - 1)) {
      --r.second;
      trimmed = true;
    } else if (IsSpace(text[r.first]) || UnpairedDelimiter(text, r, r.first)) {
      ++r.first;
      trimmed = true;
    }
  }
  return r;
}

// The bytes a short answer starting in `paragraph` may not reach past: each cell border (a `|` not
// glued to text on both sides) of a table row (a line whose first non-blank byte is `|`: Markdown
// pipe and reST grid tables) and the end of each such row, sorted. A table's answer is one cell;
// without this limit a model that finds the right cell runs its span on into the next ("Linux |
// GCC").
std::vector<int64_t> TableCellCuts(std::string_view text, ByteRange paragraph) {
  std::vector<int64_t> cuts;
  int64_t line = paragraph.first;
  while (line < paragraph.second) {
    int64_t end = line;
    while (end < paragraph.second && text[end] != '\n') ++end;
    int64_t first = line;
    while (first < end && (text[first] == ' ' || text[first] == '\t')) ++first;
    if (first < end && text[first] == '|') {
      for (int64_t i = first; i < end; ++i) {
        if (text[i] != '|') continue;
        // A pipe glued to text on both sides ("--all|-a") is the cell's own text: written tables
        // set their borders off with spaces (all 532 table rows under this machine's
        // /usr/share/doc do).
        const bool glued =
            i > first && i + 1 < end && !IsSpace(text[i - 1]) && !IsSpace(text[i + 1]);
        if (!glued) cuts.push_back(i);
      }
      cuts.push_back(end);
    }
    line = end + 1;
  }
  return cuts;
}

}  // namespace

float SpanMargin(const std::vector<AnswerSpan>& ranked) {
  for (const AnswerSpan& s : ranked) {
    if (s.byte_begin != ranked[0].byte_begin || s.byte_end != ranked[0].byte_end) {
      return ranked[0].score - s.score;
    }
  }
  return std::numeric_limits<float>::infinity();
}

QaAnswer DecodeAnswer(const RequestLogits& logits, const TokenizedDocument& doc,
                      std::string_view text, const DecodeOptions& options) {
  QaAnswer answer;
  answer.no_answer_score = logits.type_logits[0];
  const float max_logit = *std::max_element(logits.type_logits.begin(), logits.type_logits.end());
  float total = 0.0f;
  for (size_t t = 0; t < 5; ++t) {
    answer.type_probabilities[t] = std::exp(logits.type_logits[t] - max_logit);
    total += answer.type_probabilities[t];
  }
  for (float& p : answer.type_probabilities) p /= total;

  // Best non-empty paragraph: the long answer, and with add_long_score part of the answer's score.
  int64_t best_paragraph = -1;
  float runner_up_paragraph = -std::numeric_limits<float>::infinity();
  for (size_t p = 0; p < doc.paragraph_token.size(); ++p) {
    if (doc.paragraph_bytes[p].first == doc.paragraph_bytes[p].second) continue;
    const float score = logits.long_score[doc.paragraph_token[p]];
    if (best_paragraph < 0 || score > logits.long_score[doc.paragraph_token[best_paragraph]]) {
      if (best_paragraph >= 0) {
        runner_up_paragraph = logits.long_score[doc.paragraph_token[best_paragraph]];
      }
      best_paragraph = static_cast<int64_t>(p);
    } else {
      runner_up_paragraph = std::max(runner_up_paragraph, score);
    }
  }
  const float best_long_score =
      best_paragraph < 0 ? 0.0f : logits.long_score[doc.paragraph_token[best_paragraph]];

  // The rule the API states (qa.proto): NO_ANSWER exactly when
  // no_answer_score + null_threshold >= best_answer_score; otherwise the best of the others.
  const auto best_other =
      std::max_element(logits.type_logits.begin() + 1, logits.type_logits.end());
  answer.best_answer_score = *best_other + (options.add_long_score ? best_long_score : 0.0f);
  const float null_side = answer.no_answer_score + options.null_threshold.value_or(0.0f);
  const AnswerType type = null_side >= answer.best_answer_score
                              ? AnswerType::kNoAnswer
                              : static_cast<AnswerType>(best_other - logits.type_logits.begin());
  answer.decision_margin = std::abs(answer.best_answer_score - null_side);

  if (type == AnswerType::kNoAnswer || best_paragraph < 0) return answer;
  // Which of yes, no, short and long-only: close to its runner-up too.
  float runner_up_type = -std::numeric_limits<float>::infinity();
  for (auto t = logits.type_logits.begin() + 1; t != logits.type_logits.end(); ++t) {
    if (t != best_other) runner_up_type = std::max(runner_up_type, *t);
  }
  answer.decision_margin = std::min({answer.decision_margin, *best_other - runner_up_type,
                                     best_long_score - runner_up_paragraph});

  answer.type = type;
  answer.has_long_answer = true;
  const ByteRange para = doc.paragraph_bytes[best_paragraph];
  answer.long_answer = {best_paragraph, para.first, para.second, best_long_score};

  // Short candidates inside the paragraph (its content tokens, not the paragraph token).
  const int64_t first = doc.paragraph_token[best_paragraph] + 1;
  const int64_t last = best_paragraph + 1 < static_cast<int64_t>(doc.paragraph_token.size())
                           ? doc.paragraph_token[best_paragraph + 1]
                           : static_cast<int64_t>(doc.ids.size());
  const std::vector<int64_t> cuts = TableCellCuts(text, para);
  std::vector<AnswerSpan> candidates;
  for (int64_t s = first; s < last; ++s) {
    if (doc.spans[s].first == doc.spans[s].second) continue;
    const int64_t start_byte = Trim(text, doc.spans[s]).first;
    if (InsideWord(text, start_byte)) continue;
    const auto cut = std::lower_bound(cuts.begin(), cuts.end(), start_byte);
    const int64_t limit = cut == cuts.end() ? para.second : *cut;
    int64_t best_end = -1;
    for (int64_t e = s; e < std::min(last, s + options.max_answer_tokens); ++e) {
      if (doc.spans[e].first == doc.spans[e].second) continue;
      if (doc.spans[e].second > limit) break;  // token ends grow with e
      if (InsideWord(text, doc.spans[e].second)) continue;
      if (best_end < 0 || logits.end[e] > logits.end[best_end]) best_end = e;
    }
    if (best_end < 0) continue;
    const ByteRange span = TrimAnswer(text, {doc.spans[s].first, doc.spans[best_end].second});
    if (span.first == span.second) continue;
    candidates.push_back(
        {best_paragraph, span.first, span.second, logits.start[s] + logits.end[best_end]});
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const AnswerSpan& a, const AnswerSpan& b) { return a.score > b.score; });
  answer.decision_margin = std::min(answer.decision_margin, SpanMargin(candidates));
  if (static_cast<int64_t>(candidates.size()) > options.n_best) candidates.resize(options.n_best);
  answer.short_answers = std::move(candidates);
  if (answer.type == AnswerType::kShort && answer.short_answers.empty()) {
    answer.type = AnswerType::kLongOnly;
  }
  return answer;
}

}  // namespace longqa
