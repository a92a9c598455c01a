// model/tokenizers/hf by hand on tiny tokenizer.json files: offsets through normalization,
// WordPiece's unk rules, added tokens, and refusals. Parity with the Python package on 10,000
// mixed lines is tests/integration/test_tokenizers.py.
#include "model/tokenizers/hf/hf_tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model/tokenizers/hf/normalized_text.h"
#include "model/tokenizers/hf/normalizers.h"

namespace longqa {
namespace {

std::string WordPieceJson(const std::string& normalizer) {
  return R"({"added_tokens": [{"id": 0, "content": "[SEP]", "lstrip": false, "rstrip": false,
               "normalized": false, "single_word": false, "special": true},
              {"id": 9, "content": "<mask>", "lstrip": true, "rstrip": false,
               "normalized": false, "single_word": false, "special": true}],
     "normalizer": )" +
         normalizer + R"(, "pre_tokenizer": {"type": "BertPreTokenizer"},
     "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
               "max_input_chars_per_word": 6,
               "vocab": {"[SEP]": 0, "[UNK]": 1, "elan": 2, "el": 3, "##an": 4, "!": 5,
                         "北": 6, "a": 7, "##b": 8}}})";
}

std::vector<Piece> Encode(const Tokenizer& tokenizer, const std::string& text) {
  std::vector<Piece> pieces;
  std::string error;
  EXPECT_TRUE(tokenizer.Encode(text, &pieces, &error)) << error;
  return pieces;
}

MATCHER_P3(IsPiece, id, begin, end, "") {
  return arg.id == id && arg.byte_begin == begin && arg.byte_end == end;
}

TEST(HfTokenizerTest, OffsetsPointAtTheOriginalBytesThroughLowercaseAndAccentStripping) {
  auto tokenizer = HfTokenizer::Parse(
      WordPieceJson(R"({"type": "BertNormalizer", "lowercase": true, "strip_accents": null})"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  // "ÉLAN" is 5 bytes (É is 2); "E\u0301lan" decomposed is 6; both are the piece "elan".
  const auto pieces = Encode(**tokenizer, "ÉLAN E\xCC\x81lan!");
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_THAT(pieces[0], IsPiece(2, 0, 5));
  EXPECT_THAT(pieces[1], IsPiece(2, 6, 12));
  EXPECT_THAT(pieces[2], IsPiece(5, 12, 13));
}

TEST(HfTokenizerTest, WordPieceContinuationsAndUnknownWords) {
  auto tokenizer = HfTokenizer::Parse(WordPieceJson("null"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  // "elan" whole; "elan" is preferred to "el"+"##an" (longest first); "abbb" = a ##b ##b ##b;
  // "abx" has no piece for "x": the whole word is [UNK]; "abbbbbb" exceeds 6 characters.
  const auto pieces = Encode(**tokenizer, "elan abbb abx abbbbbb");
  ASSERT_EQ(pieces.size(), 7u);
  EXPECT_THAT(pieces[0], IsPiece(2, 0, 4));
  EXPECT_THAT(pieces[1], IsPiece(7, 5, 6));
  EXPECT_THAT(pieces[2], IsPiece(8, 6, 7));
  EXPECT_THAT(pieces[4], IsPiece(8, 8, 9));
  EXPECT_THAT(pieces[5], IsPiece(1, 10, 13));
  EXPECT_THAT(pieces[6], IsPiece(1, 14, 21));
  // Pieces of one pre-tokenized word share its number (tokenizers' word_ids).
  std::vector<int64_t> words;
  for (const Piece& p : pieces) words.push_back(p.word);
  EXPECT_EQ(words, (std::vector<int64_t>{0, 1, 1, 1, 1, 2, 3}));
}

TEST(HfTokenizerTest, PunctuationAndAddedTokensAreWordsOfTheirOwn) {
  auto tokenizer = HfTokenizer::Parse(WordPieceJson("null"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const auto pieces = Encode(**tokenizer, "elan![SEP]ab");
  ASSERT_EQ(pieces.size(), 5u);
  std::vector<int64_t> words;
  for (const Piece& p : pieces) words.push_back(p.word);
  EXPECT_EQ(words, (std::vector<int64_t>{0, 1, 2, 3, 3}));
}

TEST(HfTokenizerTest, AddedTokensAreMatchedInTheRawTextAndLstripTakesTheSpaceBefore) {
  auto tokenizer = HfTokenizer::Parse(WordPieceJson("null"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const auto pieces = Encode(**tokenizer, "a[SEP]a  <mask>");
  ASSERT_EQ(pieces.size(), 4u);
  EXPECT_THAT(pieces[1], IsPiece(0, 1, 6));
  EXPECT_THAT(pieces[3], IsPiece(9, 7, 15));  // both spaces before <mask> belong to it
  EXPECT_EQ((*tokenizer)->PieceToId("<mask>"), 9);
  EXPECT_EQ((*tokenizer)->IdToPiece(4), "##an");
  EXPECT_EQ((*tokenizer)->vocab_size(), 10);
}

TEST(HfTokenizerTest, ChineseCharactersAreSplitAndControlsDropped) {
  auto tokenizer = HfTokenizer::Parse(WordPieceJson(R"({"type": "BertNormalizer"})"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  // "北北" (3 bytes each) with a zero-width space (U+200B, Cf) between "a" and "北".
  const auto pieces = Encode(**tokenizer, "a\xE2\x80\x8B\xE5\x8C\x97\xE5\x8C\x97");
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_THAT(pieces[0], IsPiece(7, 0, 1));
  EXPECT_THAT(pieces[1], IsPiece(6, 4, 7));
  EXPECT_THAT(pieces[2], IsPiece(6, 7, 10));
}

TEST(HfTokenizerTest, InvalidUtf8BytesBecomeReplacementCharactersThatCleaningDrops) {
  NormalizedText text = NormalizedText::FromUtf8("a\xFF\xC3");
  ASSERT_EQ(text.size(), 3u);
  EXPECT_EQ(text.chars[1], U'\uFFFD');
  EXPECT_EQ(text.align[2].begin, 2);
  BertCleanText(&text);
  EXPECT_EQ(text.Utf8(), "a");
}

// Offsets checked against the tokenizers package (0.x): a replacement takes the alignment of the
// match's last character ("``" -> the second backtick, "aaa" -> the last a).
TEST(HfTokenizerTest, StripAndReplaceKeepOffsetsOnTheOriginalBytes) {
  auto tokenizer = HfTokenizer::Parse(R"({"normalizer": {"type": "Sequence", "normalizers": [
      {"type": "Strip", "strip_left": true, "strip_right": true},
      {"type": "Replace", "pattern": {"String": "``"}, "content": "\""},
      {"type": "Replace", "pattern": {"Regex": "a+"}, "content": "yy"}]},
    "pre_tokenizer": {"type": "WhitespaceSplit"},
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "vocab": {"[UNK]": 0, "\"": 1, "b": 2, "##b": 4, "yy": 7}}})");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const auto pieces = Encode(**tokenizer, "  ``b aaab  ");
  ASSERT_EQ(pieces.size(), 4u);
  EXPECT_THAT(pieces[0], IsPiece(1, 3, 4));
  EXPECT_THAT(pieces[1], IsPiece(4, 4, 5));
  EXPECT_THAT(pieces[2], IsPiece(7, 8, 9));
  EXPECT_THAT(pieces[3], IsPiece(4, 9, 10));
}

TEST(HfTokenizerTest, UnsupportedPartsAndBrokenFilesAreRefusedWithTheirNames) {
  auto bad_normalizer = HfTokenizer::Parse(WordPieceJson(R"({"type": "NFKC"})"));
  EXPECT_FALSE(bad_normalizer.ok());
  EXPECT_NE(bad_normalizer.status().message().find("\"NFKC\""), std::string::npos);
  auto bad_regex = HfTokenizer::Parse(
      WordPieceJson(R"({"type": "Replace", "pattern": {"Regex": "(a"}, "content": ""})"));
  EXPECT_FALSE(bad_regex.ok());
  EXPECT_NE(bad_regex.status().message().find("\"(a\""), std::string::npos);
  auto not_base64 = HfTokenizer::Parse(
      WordPieceJson(R"({"type": "Precompiled", "precompiled_charsmap": "%%%"})"));
  EXPECT_FALSE(not_base64.ok());
  EXPECT_NE(not_base64.status().message().find("base64"), std::string::npos);
  // Four bytes that announce a 400-byte trie and hold none.
  auto truncated = HfTokenizer::Parse(
      WordPieceJson(R"({"type": "Precompiled", "precompiled_charsmap": "kAEAAA=="})"));
  EXPECT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find("trie of 400 bytes"), std::string::npos);
  EXPECT_FALSE(HfTokenizer::Parse("{not json").ok());
  auto no_model = HfTokenizer::Parse(R"({"normalizer": null})");
  EXPECT_FALSE(no_model.ok());
  EXPECT_FALSE(HfTokenizer::Load("/nonexistent/tokenizer.json").ok());
}

}  // namespace
}  // namespace longqa
