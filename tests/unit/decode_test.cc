// Answer decoding on hand-made logits: spans become byte ranges of the caller's text.
#include "model/decode.h"

#include <gtest/gtest.h>

namespace longqa {
namespace {

TEST(DecodeTest, ShortAnswerDropsTrailingPunctuationGluedToAPiece) {
  // "Born in 1808. Yes": the pieces " 18" and "08." make the best span "1808.".
  const std::string text = "Born in 1808. Yes";
  TokenizedDocument doc;
  doc.ids = {4, 10, 11, 12, 13, 14};
  doc.spans = {{0, 0}, {0, 4}, {4, 7}, {7, 10}, {10, 13}, {13, 17}};
  doc.token_paragraph = {0, 0, 0, 0, 0, 0};
  doc.paragraph_bytes = {{0, 17}};
  doc.paragraph_token = {0};
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

}  // namespace
}  // namespace longqa
