// A document as the model sees it: paragraphs (the long-answer candidates), each opened by the
// paragraph token, and every token's byte span in the caller's text.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "model/format/config.h"
#include "model/tokenizers/tokenizer.h"

namespace longqa {

using ByteRange = std::pair<int64_t, int64_t>;  // [begin, end) in bytes

// Paragraphs of plain text: maximal runs of non-blank lines (a blank line holds only spaces, tabs
// or CR). Each range runs from its first line's start to its last line's end, without the newline.
std::vector<ByteRange> SplitParagraphs(std::string_view text);

// Joins the caller's paragraphs with "\n\n" (the layout the API defines offsets against) and
// returns each paragraph's range in the joined text.
std::string JoinParagraphs(const std::vector<std::string>& paragraphs,
                           std::vector<ByteRange>* ranges);

struct TokenizedDocument {
  std::vector<int32_t> ids;      // paragraph token, then the paragraph's pieces, per paragraph
  std::vector<ByteRange> spans;  // per token; the paragraph token has an empty span
  // Per token: the bytes of its whole word, from the word's first piece to its last (as
  // tokenizers' word_to_chars), or the token's own span when the tokenizer gives no words.
  std::vector<ByteRange> word_spans;
  std::vector<int64_t> token_paragraph;    // per token: its paragraph index
  std::vector<ByteRange> paragraph_bytes;  // per paragraph
  // Per paragraph: index of its paragraph token; -1 in documents tokenized without them.
  std::vector<int64_t> paragraph_token;
  // Per paragraph: the tokens [begin, end) of its table header (model/table_header.h); begin ==
  // end where the paragraph is no table with a header.
  std::vector<std::pair<int64_t, int64_t>> table_header;
};

// Tokenizes each paragraph of `text` (given by `paragraphs`) with offsets into `text`, opening
// each with special.paragraph when `paragraph_tokens` (qa_format nq) says so. Stops with
// RESOURCE_EXHAUSTED as soon as the tokens so far exceed max_tokens: a document over the limit
// costs the server the paragraphs up to the limit, not the whole document.
absl::StatusOr<TokenizedDocument> TokenizeDocument(
    const Tokenizer& tokenizer, std::string_view text, const std::vector<ByteRange>& paragraphs,
    const SpecialTokens& special, int64_t max_tokens = std::numeric_limits<int64_t>::max(),
    bool paragraph_tokens = true);

// True when `text` is valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool IsValidUtf8(std::string_view text);

// True when valid UTF-8 `text` holds at least one letter or number (Unicode general category L*
// or N*): a question of only whitespace, controls, punctuation or symbols asks nothing.
bool HasLetterOrNumber(std::string_view text);

}  // namespace longqa
