// Documents: paragraphs split at blank lines, joined paragraph lists, UTF-8 validation.
#include "model/document.h"

#include <gtest/gtest.h>

#include "tests/unit/three_byte_tokenizer.h"

namespace longqa {
namespace {

using testing_support::ThreeByteTokenizer;

TEST(DocumentTest, WordSpansCoverEveryPieceOfAWordAndParagraphTokensAreOptional) {
  const std::string text = "abcdefg hi\n\njklmn";
  const auto paragraphs = SplitParagraphs(text);
  const ThreeByteTokenizer tokenizer;
  const SpecialTokens special;
  const auto nq = TokenizeDocument(tokenizer, text, paragraphs, special);
  ASSERT_TRUE(nq.ok()) << nq.status();
  EXPECT_EQ(nq->ids.size(), 2u + 4 + 2);  // "abc" "def" "g" "hi" | "jkl" "mn"
  EXPECT_EQ(nq->paragraph_token, (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(nq->word_spans[2], (ByteRange{0, 7}));  // "def" belongs to "abcdefg"
  const auto squad = TokenizeDocument(tokenizer, text, paragraphs, special,
                                      std::numeric_limits<int64_t>::max(), false);
  ASSERT_TRUE(squad.ok()) << squad.status();
  EXPECT_EQ(squad->ids, (std::vector<int32_t>{10, 11, 12, 13, 10, 11}));
  EXPECT_EQ(squad->paragraph_token, (std::vector<int64_t>{-1, -1}));
  EXPECT_EQ(squad->token_paragraph, (std::vector<int64_t>{0, 0, 0, 0, 1, 1}));
  EXPECT_EQ(squad->word_spans,
            (std::vector<ByteRange>{{0, 7}, {0, 7}, {0, 7}, {8, 10}, {12, 17}, {12, 17}}));
}

TEST(DocumentTest, SplitsParagraphsAtBlankLines) {
  const std::string text = "\n  \nfirst line\nsecond\r\n \t\r\nthird\r\n\r\n\n last \n";
  const auto ranges = SplitParagraphs(text);
  ASSERT_EQ(ranges.size(), 3u);
  auto slice = [&](ByteRange r) { return text.substr(r.first, r.second - r.first); };
  EXPECT_EQ(slice(ranges[0]), "first line\nsecond");
  EXPECT_EQ(slice(ranges[1]), "third");
  EXPECT_EQ(slice(ranges[2]), " last ");
  EXPECT_TRUE(SplitParagraphs(" \n\t\n").empty());
  std::vector<ByteRange> joined;
  EXPECT_EQ(JoinParagraphs({"a", "", "bc"}, &joined), "a\n\n\n\nbc");
  EXPECT_EQ(joined, (std::vector<ByteRange>{{0, 1}, {3, 3}, {5, 7}}));
}

TEST(DocumentTest, ValidatesUtf8) {
  EXPECT_TRUE(IsValidUtf8("plain, é, 東京, 😀"));
  EXPECT_FALSE(IsValidUtf8("\xC3"));              // truncated
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\x80"));
}

TEST(DocumentTest, FindsALetterOrNumber) {
  EXPECT_TRUE(HasLetterOrNumber("who?"));
  EXPECT_TRUE(HasLetterOrNumber(" 1 "));
  EXPECT_TRUE(HasLetterOrNumber("\t東"));
  EXPECT_TRUE(HasLetterOrNumber("\u0663"));  // ARABIC-INDIC DIGIT THREE
  EXPECT_FALSE(HasLetterOrNumber(""));
  EXPECT_FALSE(HasLetterOrNumber("\t\n\r \u3000\u00A0"));
  EXPECT_FALSE(HasLetterOrNumber(std::string("\0\x01\x7F", 3)));
  EXPECT_FALSE(HasLetterOrNumber("?! -- \u200B\u2028 \U0001F600"));  // punctuation, format, emoji
}

}  // namespace
}  // namespace longqa
