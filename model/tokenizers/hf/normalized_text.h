// Text under normalization that remembers, for every character, the byte range of the caller's
// original text it came from: the alignment tokens' offsets are read from. The operations mirror
// Hugging Face tokenizers' NormalizedString, including how an inserted character inherits the
// alignment of the character before it, so that offsets agree with it byte for byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace longqa {

// [begin, end) in bytes of the text given to the tokenizer.
struct OriginalBytes {
  int64_t begin = 0;
  int64_t end = 0;
};

struct NormalizedText {
  std::u32string chars;
  std::vector<OriginalBytes> align;  // one per character of `chars`
  int64_t origin = 0;  // where this text starts in the caller's, whatever normalization removed

  // Decodes UTF-8; each byte of an invalid sequence becomes U+FFFD over that byte.
  static NormalizedText FromUtf8(std::string_view text, int64_t base_offset = 0);

  size_t size() const { return chars.size(); }
  bool empty() const { return chars.empty(); }
  // Characters [begin, end) with their alignments.
  NormalizedText Slice(size_t begin, size_t end) const;
  // The text as UTF-8; with char_bytes, also each character's byte offset in it and, last, its
  // size.
  std::string Utf8(std::vector<size_t>* char_bytes = nullptr) const;
  // The original byte range of characters [begin, end), which must not be empty.
  OriginalBytes OriginalRange(size_t begin, size_t end) const {
    return {align[begin].begin, align[end - 1].end};
  }

  // Replaces the text by `edits`, each a character and its change, with tokenizers' semantics:
  // change 0 replaces the next original character (and takes its alignment), change > 0 inserts
  // (taking the alignment of the last character consumed), change < 0 replaces the next one and
  // also removes the -change characters after it.
  void Transform(const std::vector<std::pair<char32_t, int>>& edits);
  // Puts c before the first character (which must exist), with that character's alignment: what
  // tokenizers' prepend does (c replaces the first character, which is then re-inserted).
  void Prepend(char32_t c);
  // Keeps only characters for which keep(c) is true; the kept keep their alignments.
  template <typename Keep>
  void Filter(Keep keep) {
    size_t out = 0;
    for (size_t i = 0; i < chars.size(); ++i) {
      if (!keep(chars[i])) continue;
      chars[out] = chars[i];
      align[out] = align[i];
      ++out;
    }
    chars.resize(out);
    align.resize(out);
  }
};

}  // namespace longqa
