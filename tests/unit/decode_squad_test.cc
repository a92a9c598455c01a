// SQuAD-style decoding on hand-made window logits: per-window softmax (not raw logits) picks the
// window, spans widen to whole words, the null rule and n-best duplicates.
#include "model/decode_squad.h"

#include <gtest/gtest.h>

#include <cmath>

namespace longqa {
namespace {

// "alpha betagamma delta": pieces alpha | beta ##gamma | delta, one paragraph.
const std::string kText = "alpha betagamma delta";

TokenizedDocument Doc() {
  TokenizedDocument doc;
  doc.ids = {10, 11, 12, 13};
  doc.spans = {{0, 5}, {6, 10}, {10, 15}, {16, 21}};
  doc.word_spans = {{0, 5}, {6, 15}, {6, 15}, {16, 21}};
  doc.token_paragraph = {0, 0, 0, 0};
  doc.paragraph_bytes = {{0, 21}};
  doc.paragraph_token = {-1};
  return doc;
}

// Window A holds tokens 0..2, window B tokens 1..3 (logits: CLS first).
RequestLogits Logits() {
  RequestLogits logits;
  logits.windows = {{0, {0, 2, 0, 0}, {0, 0, 2, 0}}, {1, {5, 3, 3, 3}, {5, 3, 3, 3}}};
  return logits;
}

std::string Slice(const AnswerSpan& s) {
  return kText.substr(s.byte_begin, s.byte_end - s.byte_begin);
}

TEST(DecodeSquadTest, PerWindowSoftmaxChoosesTheWindowAndSpansWidenToWords) {
  const QaAnswer a = DecodeSquadAnswer(Logits(), Doc(), kText, {});
  ASSERT_EQ(a.type, AnswerType::kShort);
  ASSERT_EQ(a.short_answers.size(), 1u);
  // Raw logits would prefer window B (3 + 3 > 2 + 2); its softmax is flat against its CLS.
  // A: tokens 0 .. 1 ("beta" widened to "betagamma"), p = (e^2 / (e^2 + 3))^2.
  EXPECT_EQ(Slice(a.short_answers[0]), "alpha betagamma");
  const double p = std::exp(2.0) / (std::exp(2.0) + 3.0);
  EXPECT_NEAR(a.short_answers[0].score, p * p, 1e-6);
  // Null: the smaller CLS product, window A's (1 / (e^2 + 3))^2.
  const double null = 1.0 / ((std::exp(2.0) + 3.0) * (std::exp(2.0) + 3.0));
  EXPECT_NEAR(a.no_answer_score, std::log(null), 1e-5);
  EXPECT_NEAR(a.best_answer_score, std::log(p * p), 1e-5);
  EXPECT_NEAR(a.type_probabilities[0], null / (null + p * p), 1e-6);
  EXPECT_TRUE(a.has_long_answer);
  EXPECT_EQ(a.long_answer.byte_end, 21);
}

TEST(DecodeSquadTest, NullThresholdMaxLengthAndNBest) {
  DecodeOptions options;
  const QaAnswer a = DecodeSquadAnswer(Logits(), Doc(), kText, options);
  options.null_threshold = a.best_answer_score - a.no_answer_score - 1e-3f;
  EXPECT_EQ(DecodeSquadAnswer(Logits(), Doc(), kText, options).type, AnswerType::kShort);
  options.null_threshold = a.best_answer_score - a.no_answer_score + 1e-3f;
  const QaAnswer none = DecodeSquadAnswer(Logits(), Doc(), kText, options);
  EXPECT_EQ(none.type, AnswerType::kNoAnswer);
  EXPECT_TRUE(none.short_answers.empty());
  EXPECT_FALSE(none.has_long_answer);

  options = {};
  options.max_answer_tokens = 1;  // one token: A's best is token 0 (start) with its best end
  options.n_best = 10;
  const QaAnswer n = DecodeSquadAnswer(Logits(), Doc(), kText, options);
  ASSERT_EQ(n.type, AnswerType::kShort);
  ASSERT_GE(n.short_answers.size(), 2u);
  // Both windows propose "beta" and "##gamma" (one word): each byte span is listed once, best
  // first.
  for (size_t i = 0; i < n.short_answers.size(); ++i) {
    for (size_t j = i + 1; j < n.short_answers.size(); ++j) {
      EXPECT_FALSE(n.short_answers[i].byte_begin == n.short_answers[j].byte_begin &&
                   n.short_answers[i].byte_end == n.short_answers[j].byte_end);
    }
    if (i > 0) {
      EXPECT_GE(n.short_answers[i - 1].score, n.short_answers[i].score);
    }
  }
  EXPECT_EQ(n.short_answers.size(), 3u);  // "alpha", "betagamma", "delta"
}

TEST(DecodeSquadTest, DecisionMarginIsTheClosestCallInLogProbabilities) {
  // Best: window A's "alpha betagamma", p = (e^2 / (e^2 + 3))^2. Its runner-up with other bytes
  // is also in window A ("alpha" alone, or "betagamma": e^2 / (e^2 + 3)^2), though A lists only
  // its best (n_best 1): log ratio exactly 2. Window B's best is smaller (1 / (e^2 + 3)^2).
  const QaAnswer a = DecodeSquadAnswer(Logits(), Doc(), kText, {});
  ASSERT_EQ(a.type, AnswerType::kShort);
  EXPECT_NEAR(a.decision_margin, 2.0f, 1e-5);
  // Answer or not: log(best) - log(null) = 4, less the threshold.
  EXPECT_NEAR(a.best_answer_score - a.no_answer_score, 4.0f, 1e-5);
  DecodeOptions options;
  options.null_threshold = 3.5f;
  EXPECT_NEAR(DecodeSquadAnswer(Logits(), Doc(), kText, options).decision_margin, 0.5f, 1e-5);
  options.null_threshold = 4.25f;  // no answer now, by 0.25
  const QaAnswer none = DecodeSquadAnswer(Logits(), Doc(), kText, options);
  EXPECT_EQ(none.type, AnswerType::kNoAnswer);
  EXPECT_NEAR(none.decision_margin, 0.25f, 1e-5);
}

// "alpha\n\nbeta delta": a paragraph break between tokens 0 and 1. As in the pipeline the best
// span may run across it (alpha..beta, e^8); the long answer is the paragraph where it starts, and
// the n-best list keeps only spans starting there ("beta" and "delta" spans are left out).
TEST(DecodeSquadTest, TheNBestListKeepsToSpansStartingInTheLongAnswersParagraph) {
  const std::string text = "alpha\n\nbeta delta";
  TokenizedDocument doc;
  doc.ids = {10, 11, 12};
  doc.spans = {{0, 5}, {7, 11}, {12, 17}};
  doc.word_spans = doc.spans;
  doc.token_paragraph = {0, 1, 1};
  doc.paragraph_bytes = {{0, 5}, {7, 17}};
  doc.paragraph_token = {-1, -1};
  RequestLogits logits;
  logits.windows = {{0, {0, 4, 0.5f, 1}, {0, 0, 4, 1}}};
  DecodeOptions options;
  options.n_best = 10;
  const QaAnswer a = DecodeSquadAnswer(logits, doc, text, options);
  ASSERT_EQ(a.type, AnswerType::kShort);
  EXPECT_EQ(a.long_answer.paragraph_index, 0);
  std::vector<std::string> spans;
  for (const AnswerSpan& span : a.short_answers) {
    spans.push_back(text.substr(span.byte_begin, span.byte_end - span.byte_begin));
  }
  // Scores ∝ e^(start + end logit): alpha..beta e^8, alpha..delta e^5, alpha e^4.
  EXPECT_EQ(spans, (std::vector<std::string>{"alpha\n\nbeta", "alpha\n\nbeta delta", "alpha"}));
}

}  // namespace
}  // namespace longqa
