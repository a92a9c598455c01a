#include "model/tokenizers/hf/normalized_text.h"

#include "model/tokenizers/hf/unicode_props.h"

namespace longqa {
NormalizedText NormalizedText::FromUtf8(std::string_view text, int64_t base_offset) {
  NormalizedText out;
  out.origin = base_offset;
  out.chars.reserve(text.size());
  out.align.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    char32_t c;
    int length = unicode::DecodeUtf8(text, i, &c);
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

std::string NormalizedText::Utf8(std::vector<size_t>* char_bytes) const {
  std::string out;
  out.reserve(chars.size());
  if (char_bytes != nullptr) char_bytes->assign(1, 0);
  for (char32_t c : chars) {
    unicode::AppendUtf8(c, &out);
    if (char_bytes != nullptr) char_bytes->push_back(out.size());
  }
  return out;
}

void NormalizedText::Prepend(char32_t c) {
  chars.insert(chars.begin(), c);
  align.insert(align.begin(), align.front());
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
