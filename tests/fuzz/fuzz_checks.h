// What every fuzz target asserts beyond "no crash, no sanitizer report": offsets that index the
// caller's bytes. A violation aborts with the reason, which libFuzzer reports as a crash and
// saves the input that caused it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "model/tokenizers/tokenizer.h"

namespace longqa::fuzz {

[[noreturn]] inline void Fail(const char* what, int64_t a, int64_t b) {
  std::fprintf(stderr, "fuzz check failed: %s (%lld, %lld)\n", what, static_cast<long long>(a),
               static_cast<long long>(b));
  std::abort();
}

// A UTF-8 continuation byte (10xxxxxx): no span of valid text may start or end before one.
inline bool IsContinuation(std::string_view text, int64_t at) {
  return at < static_cast<int64_t>(text.size()) &&
         (static_cast<uint8_t>(text[static_cast<size_t>(at)]) & 0xC0) == 0x80;
}

// [begin, end) lies inside text; for valid UTF-8 text, on code point boundaries.
inline void CheckSpan(std::string_view text, bool valid_utf8, int64_t begin, int64_t end) {
  if (begin < 0 || begin > end || end > static_cast<int64_t>(text.size())) {
    Fail("span outside the text", begin, end);
  }
  if (valid_utf8 && (IsContinuation(text, begin) || IsContinuation(text, end))) {
    Fail("span cuts a UTF-8 character", begin, end);
  }
}

// Pieces of one Encode call: each inside the text, begins never going backwards.
inline void CheckPieces(std::string_view text, const std::vector<Piece>& pieces,
                        int32_t vocab_size) {
  int64_t last_begin = 0;
  for (const Piece& piece : pieces) {
    if (piece.id < 0 || piece.id >= vocab_size)
      Fail("piece id outside the vocabulary", piece.id, vocab_size);
    if (piece.byte_begin < 0 || piece.byte_begin > piece.byte_end ||
        piece.byte_end > static_cast<int64_t>(text.size())) {
      Fail("piece outside the text", piece.byte_begin, piece.byte_end);
    }
    if (piece.byte_begin < last_begin) Fail("pieces go backwards", last_begin, piece.byte_begin);
    last_begin = piece.byte_begin;
  }
}

}  // namespace longqa::fuzz
