#include "model/tokenizers/hf/normalized_text.h"

#include "model/tokenizers/hf/unicode_props.h"

namespace longqa {
namespace {

// Decodes one UTF-8 sequence at text[i]; returns its length, or 0 when it is invalid.
int DecodeOne(std::string_view text, size_t i, char32_t* c) {
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
    if ((next & 0xC0) != 0x80) return 0;
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

}  // namespace

NormalizedText NormalizedText::FromUtf8(std::string_view text, int64_t base_offset) {
  NormalizedText out;
  out.origin = base_offset;
  out.chars.reserve(text.size());
  out.align.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    char32_t c;
    int length = DecodeOne(text, i, &c);
    if (length == 0) {
      c = 0xFFFD;
      length = 1;
    }
    out.chars.push_back(c);
    const int64_t begin = base_offset + static_cast<int64_t>(i);
    out.align.push_back({begin, begin + length});
    i += length;
  }
  return out;
}

NormalizedText NormalizedText::Slice(size_t begin, size_t end) const {
  NormalizedText out;
  out.origin = begin < align.size() ? align[begin].begin : origin;
  out.chars.assign(chars.begin() + begin, chars.begin() + end);
  out.align.assign(align.begin() + begin, align.begin() + end);
  return out;
}

std::string NormalizedText::Utf8() const {
  std::string out;
  out.reserve(chars.size());
  for (char32_t c : chars) unicode::AppendUtf8(c, &out);
  return out;
}

void NormalizedText::Transform(const std::vector<std::pair<char32_t, int>>& edits) {
  std::u32string new_chars;
  std::vector<OriginalBytes> new_align;
  new_chars.reserve(edits.size());
  new_align.reserve(edits.size());
  size_t consumed = 0;
  for (const auto& [c, change] : edits) {
    OriginalBytes range;
    if (change > 0) {
      // Inserted before anything was consumed: an empty range where the text starts.
      range = consumed > 0    ? align[consumed - 1]
              : align.empty() ? OriginalBytes{0, 0}
                              : OriginalBytes{align[0].begin, align[0].begin};
    } else {
      range = align[consumed];
      consumed += 1 + static_cast<size_t>(-change);
    }
    new_chars.push_back(c);
    new_align.push_back(range);
  }
  chars = std::move(new_chars);
  align = std::move(new_align);
}

}  // namespace longqa
