// Answer decoding on hand-made logits: spans become byte ranges of the caller's text.
#include "model/decode.h"

#include <gtest/gtest.h>

#include <cmath>

namespace longqa {
namespace {

// One paragraph of pieces at the given byte ranges of `text`; the paragraph token first.
TokenizedDocument OneParagraph(const std::string& text, const std::vector<ByteRange>& pieces) {
  TokenizedDocument doc;
  doc.spans = {{0, 0}};
  doc.spans.insert(doc.spans.end(), pieces.begin(), pieces.end());
  doc.ids.assign(doc.spans.size(), 10);
  doc.token_paragraph.assign(doc.spans.size(), 0);
  doc.paragraph_bytes = {{0, static_cast<int64_t>(text.size())}};
  doc.paragraph_token = {0};
  return doc;
}

std::string BestShort(const std::string& text, const TokenizedDocument& doc,
                      const std::vector<float>& start, const std::vector<float>& end) {
  RequestLogits logits;
  logits.type_logits = {0, 0, 0, 5, 0};
  logits.start = start;
  logits.end = end;
  logits.long_score.assign(start.size(), 0.0f);
  const QaAnswer a = DecodeAnswer(logits, doc, text, {});
  if (a.short_answers.empty()) return "<none>";
  return text.substr(a.short_answers[0].byte_begin,
                     a.short_answers[0].byte_end - a.short_answers[0].byte_begin);
}

TEST(DecodeTest, ShortAnswerDropsTrailingPunctuationGluedToAPiece) {
  // "Born in 1808. Yes": the pieces " 18" and "08." make the best span "1808.".
  const std::string text = "Born in 1808. Yes";
  const TokenizedDocument doc = OneParagraph(text, {{0, 4}, {4, 7}, {7, 10}, {10, 13}, {13, 17}});
  RequestLogits logits;
  logits.type_logits = {0, 0, 0, 5, 0};
  logits.start = {0, 0, 0, 9, 0, 0};
  logits.end = {0, 0, 0, 0, 9, 0};
  logits.long_score = {1, 0, 0, 0, 0, 0};
  const QaAnswer a = DecodeAnswer(logits, doc, text, {});
  ASSERT_EQ(a.type, AnswerType::kShort);
  ASSERT_EQ(a.short_answers.size(), 1u);
  EXPECT_EQ(text.substr(a.short_answers[0].byte_begin,
                        a.short_answers[0].byte_end - a.short_answers[0].byte_begin),
            "1808");
}

// The best span for each case, from its start piece to its end piece (token numbers: the pieces'
// index + 1, the paragraph token first).
std::string SpanFromTo(const std::string& text, const std::vector<ByteRange>& pieces, int from,
                       int to) {
  std::vector<float> start(pieces.size() + 1, 0.0f), end(pieces.size() + 1, 0.0f);
  start[from] = 9;
  end[to] = 9;
  return BestShort(text, OneParagraph(text, pieces), start, end);
}

TEST(DecodeTest, ShortAnswerDropsABracketOrBacktickItDoesNotPair) {
  // A table's "`LongqaLatencyObjective` (warning)": the model ends its span on the ")" piece.
  const std::string alert = "Alert (warning) fires";
  const std::vector<ByteRange> alert_pieces = {{0, 5}, {5, 7}, {7, 14}, {14, 15}, {15, 21}};
  EXPECT_EQ(SpanFromTo(alert, alert_pieces, 3, 4), "warning");
  EXPECT_EQ(SpanFromTo(alert, alert_pieces, 2, 3), "warning");    // "(warning" from its start
  EXPECT_EQ(SpanFromTo(alert, alert_pieces, 2, 4), "(warning)");  // paired: kept whole
  // A code span cut at one end, and one taken whole.
  const std::string run = "Run `make test` now";
  const std::vector<ByteRange> run_pieces = {{0, 3}, {3, 5}, {5, 9}, {9, 14}, {14, 15}, {15, 19}};
  EXPECT_EQ(SpanFromTo(run, run_pieces, 3, 5), "make test");
  EXPECT_EQ(SpanFromTo(run, run_pieces, 2, 4), "make test");
  EXPECT_EQ(SpanFromTo(run, run_pieces, 2, 5), "`make test`");
  // Brackets inside the answer are its own: "f(x)" stays, "f(x))." loses the stray ")" and ".".
  const std::string call = "Call f(x)). Done";
  const std::vector<ByteRange> call_pieces = {{0, 4}, {4, 6},  {6, 7},  {7, 8},
                                              {8, 9}, {9, 11}, {11, 16}};
  EXPECT_EQ(SpanFromTo(call, call_pieces, 2, 5), "f(x)");
  EXPECT_EQ(SpanFromTo(call, call_pieces, 2, 6), "f(x)");
}

// "Alpha beta.\n\nGamma delta.": two paragraphs, each a paragraph token and three pieces.
const std::string kTwoParagraphs = "Alpha beta.\n\nGamma delta.";

TokenizedDocument TwoParagraphs() {
  TokenizedDocument doc;
  doc.ids = {4, 10, 11, 12, 4, 13, 14, 12};
  doc.spans = {{0, 0}, {0, 5}, {5, 10}, {10, 11}, {13, 13}, {13, 18}, {18, 24}, {24, 25}};
  doc.token_paragraph = {0, 0, 0, 0, 1, 1, 1, 1};
  doc.paragraph_bytes = {{0, 11}, {13, 25}};
  doc.paragraph_token = {0, 4};
  return doc;
}

// Type SHORT by 3 over NO_ANSWER (less the threshold) and by 3 over the other types; paragraph 0
// by 0.75; its spans "Alpha beta" (4 + 5) and "beta" (1 + 5) by 3.
RequestLogits CloseParagraphs() {
  RequestLogits logits;
  logits.type_logits = {0, 0, 0, 3, 0};
  logits.start = {0, 4, 1, 0, 0, 0, 0, 0};
  logits.end = {0, 0, 5, 0, 0, 0, 0, 0};
  logits.long_score = {2, 0, 0, 0, 1.25f, 0, 0, 0};
  return logits;
}

TEST(DecodeTest, DecisionMarginIsTheClosestCallTheAnswerRestsOn) {
  const TokenizedDocument doc = TwoParagraphs();
  RequestLogits logits = CloseParagraphs();
  QaAnswer a = DecodeAnswer(logits, doc, kTwoParagraphs, {});
  ASSERT_EQ(a.type, AnswerType::kShort);
  ASSERT_EQ(a.short_answers.size(), 1u);
  EXPECT_EQ(a.short_answers[0].byte_end, 10);
  EXPECT_FLOAT_EQ(a.decision_margin, 0.75f);  // the paragraphs
  logits.long_score[4] = -5;
  EXPECT_FLOAT_EQ(DecodeAnswer(logits, doc, kTwoParagraphs, {}).decision_margin, 3.0f);
  logits.start[2] = 3.5f;  // "beta" now 0.5 behind "Alpha beta"
  EXPECT_FLOAT_EQ(DecodeAnswer(logits, doc, kTwoParagraphs, {}).decision_margin, 0.5f);
  logits.type_logits[1] = 2.75f;  // YES 0.25 behind SHORT
  EXPECT_FLOAT_EQ(DecodeAnswer(logits, doc, kTwoParagraphs, {}).decision_margin, 0.25f);
  DecodeOptions options;
  options.null_threshold = 2.9f;  // NO_ANSWER 0.1 behind
  EXPECT_NEAR(DecodeAnswer(logits, doc, kTwoParagraphs, options).decision_margin, 0.1f, 1e-6);
  // No answer by 1: the paragraphs' and spans' closeness no longer matter.
  options.null_threshold = 4.0f;
  logits.long_score[4] = 1.99f;
  a = DecodeAnswer(logits, doc, kTwoParagraphs, options);
  EXPECT_EQ(a.type, AnswerType::kNoAnswer);
  EXPECT_FLOAT_EQ(a.decision_margin, 1.0f);
}

TEST(DecodeTest, AddLongScoreWeighsNoAnswerAgainstTypeAndParagraphTogether) {
  const TokenizedDocument doc = TwoParagraphs();
  RequestLogits logits = CloseParagraphs();  // SHORT 3 over NO_ANSWER; paragraph 0 scores 2
  DecodeOptions options;
  options.add_long_score = true;
  QaAnswer a = DecodeAnswer(logits, doc, kTwoParagraphs, options);
  EXPECT_FLOAT_EQ(a.best_answer_score, 3.0f + 2.0f);
  EXPECT_FLOAT_EQ(a.no_answer_score, 0.0f);
  EXPECT_EQ(a.type, AnswerType::kShort);
  EXPECT_EQ(a.long_answer.paragraph_index, 0);
  // A threshold of 4 nulls the type logit alone (0 + 4 >= 3) but not type + paragraph (5).
  options.null_threshold = 4.0f;
  a = DecodeAnswer(logits, doc, kTwoParagraphs, options);
  EXPECT_EQ(a.type, AnswerType::kShort);
  EXPECT_FLOAT_EQ(a.decision_margin, 0.75f);  // still the paragraphs': 5 - 4 = 1 is wider
  options.add_long_score = false;
  EXPECT_EQ(DecodeAnswer(logits, doc, kTwoParagraphs, options).type, AnswerType::kNoAnswer);
  // A question whose best paragraph scores low: the same type logits, now NO_ANSWER.
  options.add_long_score = true;
  options.null_threshold = 0.0f;
  logits.long_score[0] = -4.0f;
  logits.long_score[4] = -3.5f;  // paragraph 1 is the best now, at -3.5
  a = DecodeAnswer(logits, doc, kTwoParagraphs, options);
  EXPECT_FLOAT_EQ(a.best_answer_score, 3.0f - 3.5f);
  EXPECT_EQ(a.type, AnswerType::kNoAnswer);
  EXPECT_FALSE(a.has_long_answer);
  EXPECT_FLOAT_EQ(a.decision_margin, 0.5f);
  // The rule as qa.proto states it, at thresholds either side of the margin.
  for (const float t : {-0.51f, -0.49f}) {
    options.null_threshold = t;
    a = DecodeAnswer(logits, doc, kTwoParagraphs, options);
    EXPECT_EQ(a.type == AnswerType::kNoAnswer, a.no_answer_score + t >= a.best_answer_score) << t;
    EXPECT_EQ(a.type == AnswerType::kNoAnswer, t > -0.5f) << t;
  }
}

TEST(DecodeTest, SpanMarginSkipsRunnersUpWithTheBestOnesBytes) {
  EXPECT_FLOAT_EQ(SpanMargin({{0, 0, 5, 9}, {0, 0, 5, 8.5f}, {0, 6, 10, 7}}), 2.0f);
  EXPECT_TRUE(std::isinf(SpanMargin({{0, 0, 5, 9}, {0, 0, 5, 8}})));
  EXPECT_TRUE(std::isinf(SpanMargin({})));
}

TEST(DecodeTest, ShortAnswerStaysInItsTableCell) {
  // A pipe-table row: the end logits favour "Linux | GCC", across the cell border; the answer
  // is the start's cell. Pieces 1-8: "|", " KVX", " |", " Linux", " |", " GCC", " |", then row
  // 2's "|".
  const std::string text = "| KVX | Linux | GCC |\n| x86 | Linux | Clang |";
  const TokenizedDocument doc =
      OneParagraph(text, {{0, 1}, {1, 5}, {5, 7}, {7, 13}, {13, 15}, {15, 19}, {19, 21}, {22, 23}});
  EXPECT_EQ(BestShort(text, doc, {0, 0, 0, 0, 9, 0, 0, 0, 0}, {0, 0, 0, 0, 1, 0, 9, 0, 0}),
            "Linux");
  // A start on a border has no span; the next best start wins.
  EXPECT_EQ(BestShort(text, doc, {0, 0, 0, 9, 1, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 9, 0, 0, 0}),
            "Linux");
  // The last cell ends at the row's end, not in the next row.
  EXPECT_EQ(BestShort(text, doc, {0, 0, 0, 0, 0, 0, 9, 0, 0}, {0, 0, 0, 0, 0, 0, 1, 0, 9}), "GCC");
}

TEST(DecodeTest, ShortAnswerMayHoldAGluedPipeInATableCell) {
  // "--all|-a" is one cell's text: its pipe has no space beside it.
  const std::string text = "| --all|-a | Send to all |";
  const TokenizedDocument doc =
      OneParagraph(text, {{0, 1}, {1, 7}, {7, 8}, {8, 10}, {10, 12}, {12, 17}, {17, 20}});
  EXPECT_EQ(BestShort(text, doc, {0, 0, 9, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 9, 0, 0, 0}), "--all|-a");
}

TEST(DecodeTest, ShortAnswerMayHoldAPipeOutsideATable) {
  // A shell pipe in a sentence is not a table: the span runs across it.
  const std::string text = "Run ls | grep x now";
  const TokenizedDocument doc =
      OneParagraph(text, {{0, 3}, {3, 6}, {6, 8}, {8, 13}, {13, 15}, {15, 19}});
  EXPECT_EQ(BestShort(text, doc, {0, 0, 9, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 9, 0}), "ls | grep x");
}

}  // namespace
}  // namespace longqa
