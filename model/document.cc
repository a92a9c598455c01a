#include "model/document.h"

#include "absl/strings/str_cat.h"
#include "model/table_header.h"
#include "model/tokenizers/hf/unicode_props.h"

namespace longqa {
namespace {

bool IsBlankLine(std::string_view line) {
  for (char c : line) {
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}

}  // namespace

std::vector<ByteRange> SplitParagraphs(std::string_view text) {
  std::vector<ByteRange> paragraphs;
  int64_t para_begin = -1, para_end = -1;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(pos, nl - pos);
    if (IsBlankLine(line)) {
      if (para_begin >= 0) paragraphs.emplace_back(para_begin, para_end);
      para_begin = -1;
    } else {
      if (para_begin < 0) para_begin = static_cast<int64_t>(pos);
      int64_t end = static_cast<int64_t>(nl);
      if (end > static_cast<int64_t>(pos) && text[end - 1] == '\r') --end;  // CRLF
      para_end = end;
    }
    if (nl == text.size()) break;
    pos = nl + 1;
  }
  if (para_begin >= 0) paragraphs.emplace_back(para_begin, para_end);
  return paragraphs;
}

std::string JoinParagraphs(const std::vector<std::string>& paragraphs,
                           std::vector<ByteRange>* ranges) {
  std::string text;
  ranges->clear();
  for (size_t i = 0; i < paragraphs.size(); ++i) {
    if (i > 0) text += "\n\n";
    const int64_t begin = static_cast<int64_t>(text.size());
    text += paragraphs[i];
    ranges->emplace_back(begin, static_cast<int64_t>(text.size()));
  }
  return text;
}

absl::StatusOr<TokenizedDocument> TokenizeDocument(const Tokenizer& tokenizer,
                                                   std::string_view text,
                                                   const std::vector<ByteRange>& paragraphs,
                                                   const SpecialTokens& special, int64_t max_tokens,
                                                   bool paragraph_tokens) {
  TokenizedDocument doc;
  std::vector<Piece> pieces;
  std::string error;
  for (size_t p = 0; p < paragraphs.size(); ++p) {
    const auto [begin, end] = paragraphs[p];
    if (begin < 0 || begin > end || end > static_cast<int64_t>(text.size())) {
      return absl::InvalidArgumentError(absl::StrCat("paragraph ", p, " lies outside the text"));
    }
    doc.paragraph_bytes.emplace_back(begin, end);
    doc.paragraph_token.push_back(paragraph_tokens ? static_cast<int64_t>(doc.ids.size()) : -1);
    if (paragraph_tokens) {
      doc.ids.push_back(special.paragraph);
      doc.spans.emplace_back(begin, begin);
      doc.word_spans.emplace_back(begin, begin);
      doc.token_paragraph.push_back(static_cast<int64_t>(p));
    }
    if (!tokenizer.Encode(text.substr(begin, end - begin), &pieces, &error)) {
      return absl::InternalError(error);
    }
    // The header's tokens: the pieces that lie inside its bytes (consecutive ones).
    const auto [header_begin, header_end] = TableHeaderBytes(text.substr(begin, end - begin));
    auto& header = doc.table_header.emplace_back(0, 0);
    for (const Piece& piece : pieces) {
      if (header_begin < header_end && piece.byte_begin >= header_begin &&
          piece.byte_end <= header_end) {
        const int64_t at = static_cast<int64_t>(doc.ids.size());
        if (header.first == header.second) header.first = at;
        header.second = at + 1;
      }
      doc.ids.push_back(piece.id);
      doc.spans.emplace_back(begin + piece.byte_begin, begin + piece.byte_end);
      doc.token_paragraph.push_back(static_cast<int64_t>(p));
    }
    // A word's pieces are consecutive: its span runs from the first one's begin to the last's end.
    for (size_t first = 0; first < pieces.size();) {
      size_t last = first;
      while (pieces[first].word >= 0 && last + 1 < pieces.size() &&
             pieces[last + 1].word == pieces[first].word) {
        ++last;
      }
      for (size_t i = first; i <= last; ++i) {
        doc.word_spans.emplace_back(begin + pieces[first].byte_begin,
                                    begin + pieces[last].byte_end);
      }
      first = last + 1;
    }
    if (static_cast<int64_t>(doc.ids.size()) > max_tokens) {
      return absl::ResourceExhaustedError(
          absl::StrCat("document has more than ", max_tokens, " tokens (", doc.ids.size(),
                       " in its first ", p + 1, " of ", paragraphs.size(),
                       " paragraphs); this server accepts at most ", max_tokens));
    }
  }
  return doc;
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    char32_t c;
    const int length = unicode::DecodeUtf8(s, i, &c);
    if (length == 0) return false;
    i += static_cast<size_t>(length);
  }
  return true;
}

bool HasLetterOrNumber(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    char32_t c;
    const int length = unicode::DecodeUtf8(s, i, &c);
    if (length == 0) return false;
    if (unicode::IsLetter(c) || unicode::IsNumber(c)) return true;
    i += static_cast<size_t>(length);
  }
  return false;
}

}  // namespace longqa
