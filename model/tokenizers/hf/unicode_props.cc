#include "model/tokenizers/hf/unicode_props.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>
#include <unicode/utf16.h>

namespace longqa::unicode {
namespace {

// The Unicode version of each of tokenizers' tables (measured over every code point against
// tokenizers 0.19.1: docs/tokenizers.md).
constexpr int kCategoryVersion = 8;        // unicode_categories crate: Unicode 8.0
constexpr int kDecompositionVersion = 12;  // unicode-normalization-alignments: 12.x (not 13.0)
constexpr int kRegexVersion = 14;          // Oniguruma (the byte-level regex): Unicode 14.0

// Characters assigned by Unicode 8.0 whose general category changed later; the crate still has
// the old one. (A list of facts about Unicode's history, which ICU does not carry.)
struct CategoryChange {
  char32_t c;
  UCharCategory category_in_8_0;
};
constexpr CategoryChange kChangedSince8[] = {
    {0x1734, U_NON_SPACING_MARK},        // HANUNOO SIGN PAMUDPOD: Mc since 14.0
    {0x1885, U_OTHER_LETTER},            // MONGOLIAN LETTER ALI GALI BALUDA: Mn since 9.0
    {0x1886, U_OTHER_LETTER},            // MONGOLIAN LETTER ALI GALI THREE BALUDA: Mn since 9.0
    {0xA9BD, U_COMBINING_SPACING_MARK},  // JAVANESE CONSONANT SIGN KERET: Mn since 12.0
    {0x111C9, U_OTHER_PUNCTUATION},      // SHARADA SANDHI MARK: Mn since 11.0
    {0x166D, U_OTHER_PUNCTUATION},       // CANADIAN SYLLABICS CHI SIGN: So since 12.0
};

// The major Unicode version that assigned c; 0 for unassigned code points.
int MajorAge(char32_t c) {
  UVersionInfo age;
  u_charAge(static_cast<UChar32>(c), age);
  return age[0] == 0 && age[1] == 0 ? 0 : age[0];
}

bool AssignedBy(char32_t c, int major_version) {
  const int age = MajorAge(c);
  return age != 0 && age <= major_version;
}

UCharCategory CategoryOfUnicode8(char32_t c) {
  if (c < 0x80) return static_cast<UCharCategory>(u_charType(static_cast<UChar32>(c)));
  if (!AssignedBy(c, kCategoryVersion)) return U_UNASSIGNED;
  for (const CategoryChange& change : kChangedSince8) {
    if (change.c == c) return change.category_in_8_0;
  }
  return static_cast<UCharCategory>(u_charType(static_cast<UChar32>(c)));
}

const icu::Normalizer2& Nfd() {
  static const icu::Normalizer2* nfd = [] {
    UErrorCode error = U_ZERO_ERROR;
    return icu::Normalizer2::getNFDInstance(error);
  }();
  return *nfd;
}

}  // namespace

bool IsWhitespace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= '\t' && c <= '\r');
  return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_WHITE_SPACE);
}

bool IsBertControl(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  switch (CategoryOfUnicode8(c)) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_PRIVATE_USE_CHAR:
    case U_SURROGATE:
      return true;
    default:
      return false;
  }
}

bool IsBertPunctuation(char32_t c) {
  if (c < 0x80) {
    return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
           (c >= 123 && c <= 126);
  }
  switch (CategoryOfUnicode8(c)) {
    case U_DASH_PUNCTUATION:
    case U_START_PUNCTUATION:
    case U_END_PUNCTUATION:
    case U_CONNECTOR_PUNCTUATION:
    case U_OTHER_PUNCTUATION:
    case U_INITIAL_PUNCTUATION:
    case U_FINAL_PUNCTUATION:
      return true;
    default:
      return false;
  }
}

bool IsLetter(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  return AssignedBy(c, kRegexVersion) &&
         (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_L_MASK) != 0;
}

bool IsNumber(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return AssignedBy(c, kRegexVersion) &&
         (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_N_MASK) != 0;
}

bool IsNonspacingMark(char32_t c) { return CategoryOfUnicode8(c) == U_NON_SPACING_MARK; }

bool IsChineseChar(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

void AppendLowercase(char32_t c, std::u32string* out) {
  if (c < 0x80) {
    out->push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
    return;
  }
  UChar source[2];
  int32_t source_length = 0;
  U16_APPEND_UNSAFE(source, source_length, static_cast<UChar32>(c));
  UChar lower[8];
  UErrorCode error = U_ZERO_ERROR;
  // The root locale: no Turkish or Lithuanian tailoring, as in Rust.
  const int32_t length = u_strToLower(lower, 8, source, source_length, "", &error);
  if (U_FAILURE(error)) {
    out->push_back(c);
    return;
  }
  for (int32_t i = 0; i < length;) {
    UChar32 d;
    U16_NEXT(lower, i, length, d);
    out->push_back(static_cast<char32_t>(d));
  }
}

void AppendCanonicalDecomposition(char32_t c, std::u32string* out) {
  if (c < 0xC0 || !AssignedBy(c, kDecompositionVersion)) {
    out->push_back(c);
    return;
  }
  UErrorCode error = U_ZERO_ERROR;
  const icu::UnicodeString decomposed =
      Nfd().normalize(icu::UnicodeString(static_cast<UChar32>(c)), error);
  if (U_FAILURE(error)) {
    out->push_back(c);
    return;
  }
  for (int32_t i = 0; i < decomposed.length();) {
    const UChar32 d = decomposed.char32At(i);
    out->push_back(static_cast<char32_t>(d));
    i += U16_LENGTH(d);
  }
}

uint8_t CombiningClass(char32_t c) {
  if (c < 0x300 || !AssignedBy(c, kDecompositionVersion)) return 0;
  return u_getCombiningClass(static_cast<UChar32>(c));
}

int DecodeUtf8(std::string_view text, size_t i, char32_t* c) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  int length;
  char32_t value;
  if (lead < 0x80) {
    *c = lead;
    return 1;
  } else if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    value = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    value = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    value = lead & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (int k = 1; k < length; ++k) {
    const unsigned char next = byte(i + k);
    if (!IsUtf8Continuation(next)) return 0;
    value = (value << 6) | (next & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are invalid.
  if ((length == 3 && value < 0x800) || (length == 4 && (value < 0x10000 || value > 0x10FFFF)) ||
      (value >= 0xD800 && value <= 0xDFFF)) {
    return 0;
  }
  *c = value;
  return length;
}

int Utf8Length(char32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

void AppendUtf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace longqa::unicode
