// Unicode character properties exactly as Hugging Face tokenizers (0.19) applies them, computed
// from ICU rather than from hand-written tables. tokenizers mixes Unicode versions: its general
// categories (controls, punctuation, nonspacing marks) come from a crate frozen at Unicode 8.0,
// its canonical decompositions from one older than 13.0, while whitespace and lowercase follow
// Rust's current tables (ICU 72 = Unicode 15 agrees on every code point), and its byte-level
// regex (Oniguruma) uses Unicode 14.0. Each function below
// says which; docs/tokenizers.md has the measurement behind it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace longqa::unicode {

// Rust's char::is_whitespace (the White_Space property).
bool IsWhitespace(char32_t c);
// BERT's control characters: general category Cc, Cf, Co or Cs as of Unicode 8.0 (characters
// assigned later count as unassigned, which is not a control), except \t \n \r.
bool IsBertControl(char32_t c);
// BERT's punctuation: ASCII punctuation, or a P* category as of Unicode 8.0.
bool IsBertPunctuation(char32_t c);
// General category Mn as of Unicode 8.0 (what strip_accents removes after NFD).
bool IsNonspacingMark(char32_t c);
// The CJK ideograph blocks BERT surrounds with spaces (its own definition, part of the model).
bool IsChineseChar(char32_t c);
// The regex classes of GPT-2's byte-level pattern as tokenizers' Oniguruma sees them: \p{L}
// (general category L*) and \p{N} (N*) as of Unicode 14.0.
bool IsLetter(char32_t c);
bool IsNumber(char32_t c);
// Rust's char::to_lowercase: the full (possibly multi-character) context-free mapping.
void AppendLowercase(char32_t c, std::u32string* out);
// The canonical decomposition of one character (recursively applied, not yet reordered), for
// characters the decomposition tables of tokenizers know (assigned before Unicode 13.0).
void AppendCanonicalDecomposition(char32_t c, std::u32string* out);
// Canonical combining class, with the same age limit (0 for newer characters).
uint8_t CombiningClass(char32_t c);

// UTF-8 helpers.
// Decodes the sequence at text[i] into *c and returns its length, or returns 0 when it is not
// valid UTF-8 (a stray or truncated byte, an overlong form, a surrogate, past U+10FFFF).
int DecodeUtf8(std::string_view text, size_t i, char32_t* c);
inline bool IsUtf8Continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }
int Utf8Length(char32_t c);
void AppendUtf8(char32_t c, std::string* out);

}  // namespace longqa::unicode
