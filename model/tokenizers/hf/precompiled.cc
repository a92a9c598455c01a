#include "model/tokenizers/hf/precompiled.h"

#include <unicode/ubrk.h>
#include <unicode/utext.h>

#include "absl/strings/str_cat.h"
#include "model/tokenizers/hf/unicode_props.h"

namespace longqa {
namespace {

// darts-clone's unit layout (sentencepiece's Darts::DoubleArray).
bool HasLeaf(uint32_t unit) { return (unit >> 8) & 1; }
uint32_t Value(uint32_t unit) { return unit & ((1u << 31) - 1); }
uint32_t Label(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
uint32_t Offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

// tokenizers' Precompiled `replace`: the new characters replace the old one for one; extra new
// ones are insertions; fewer new ones fold the removal into the last edit made so far (which
// may belong to an earlier grapheme: the crate's behaviour, kept for equal offsets).
void Replace(std::vector<std::pair<char32_t, int>>* edits, size_t old_count,
             std::string_view replacement) {
  size_t new_count = 0;
  for (size_t i = 0; i < replacement.size();) {
    char32_t c;
    const int length = unicode::DecodeUtf8(replacement, i, &c);
    edits->push_back({c, 0});
    ++new_count;
    i += static_cast<size_t>(length > 0 ? length : 1);
  }
  if (new_count > old_count) {
    for (size_t k = 0; k < new_count - old_count; ++k) (*edits)[edits->size() - 1 - k].second = 1;
  } else if (new_count < old_count && !edits->empty()) {
    edits->back().second -= static_cast<int>(old_count - new_count);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<PrecompiledNormalizer>> PrecompiledNormalizer::Parse(
    std::string_view charsmap) {
  auto bad = [](const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrCat("tokenizer.json: Precompiled precompiled_charsmap ", why));
  };
  if (charsmap.size() < 4) return bad("is shorter than its 4-byte header");
  uint32_t trie_bytes = 0;
  for (int i = 3; i >= 0; --i) trie_bytes = (trie_bytes << 8) | static_cast<uint8_t>(charsmap[i]);
  if (trie_bytes % 4 != 0 || trie_bytes == 0 || trie_bytes > charsmap.size() - 4) {
    return bad(absl::StrCat("has a trie of ", trie_bytes, " bytes in ", charsmap.size()));
  }
  auto normalizer = std::unique_ptr<PrecompiledNormalizer>(new PrecompiledNormalizer());
  normalizer->trie_.resize(trie_bytes / 4);
  for (size_t u = 0; u < normalizer->trie_.size(); ++u) {
    uint32_t unit = 0;
    for (int i = 3; i >= 0; --i) {
      unit = (unit << 8) | static_cast<uint8_t>(charsmap[4 + 4 * u + static_cast<size_t>(i)]);
    }
    normalizer->trie_[u] = unit;
  }
  normalizer->replacements_ = std::string(charsmap.substr(4 + trie_bytes));
  for (size_t i = 0; i < normalizer->replacements_.size();) {
    char32_t c;
    const int length = unicode::DecodeUtf8(normalizer->replacements_, i, &c);
    if (length == 0) return bad("holds replacements that are not UTF-8");
    i += static_cast<size_t>(length);
  }
  return normalizer;
}

std::optional<std::string_view> PrecompiledNormalizer::Lookup(std::string_view bytes) const {
  const size_t n = trie_.size();
  size_t node = Offset(trie_[0]);
  for (const char ch : bytes) {
    const uint8_t c = static_cast<uint8_t>(ch);
    if (c == 0) break;
    node ^= c;
    if (node >= n) return std::nullopt;
    const uint32_t unit = trie_[node];
    if (Label(unit) != c) return std::nullopt;
    node ^= Offset(unit);
    if (node >= n) return std::nullopt;
    if (HasLeaf(unit)) {
      const size_t begin = Value(trie_[node]);
      if (begin >= replacements_.size()) return std::nullopt;
      const size_t end = replacements_.find('\0', begin);
      return std::string_view(replacements_)
          .substr(begin, (end == std::string::npos ? replacements_.size() : end) - begin);
    }
  }
  return std::nullopt;
}

void PrecompiledNormalizer::Normalize(NormalizedText* text) const {
  if (text->empty()) return;
  std::vector<size_t> char_bytes;
  const std::string utf8 = text->Utf8(&char_bytes);
  // Extended grapheme clusters by ICU's rules (the crate uses unicode-segmentation's).
  UErrorCode status = U_ZERO_ERROR;
  UText* utext = utext_openUTF8(nullptr, utf8.data(), static_cast<int64_t>(utf8.size()), &status);
  UBreakIterator* breaks = ubrk_open(UBRK_CHARACTER, nullptr, nullptr, 0, &status);
  ubrk_setUText(breaks, utext, &status);
  std::vector<size_t> boundaries;  // byte offsets
  if (U_SUCCESS(status)) {
    for (int32_t b = ubrk_first(breaks); b != UBRK_DONE; b = ubrk_next(breaks)) {
      boundaries.push_back(static_cast<size_t>(b));
    }
  } else {
    for (size_t b : char_bytes) boundaries.push_back(b);  // one character a cluster
  }
  ubrk_close(breaks);
  utext_close(utext);

  std::vector<std::pair<char32_t, int>> edits;
  edits.reserve(text->size());
  bool modified = false;
  size_t ch = 0;  // the first character of the cluster
  for (size_t k = 0; k + 1 < boundaries.size(); ++k) {
    const size_t begin = boundaries[k], end = boundaries[k + 1];
    size_t last = ch;  // one past the cluster's last character
    while (last < text->size() && char_bytes[last] < end) ++last;
    const std::string_view cluster(utf8.data() + begin, end - begin);
    std::optional<std::string_view> whole;
    if (cluster.size() < 6) whole = Lookup(cluster);
    if (whole) {
      modified = true;
      Replace(&edits, last - ch, *whole);
    } else {
      for (size_t i = ch; i < last; ++i) {
        const std::string_view part(utf8.data() + char_bytes[i], char_bytes[i + 1] - char_bytes[i]);
        if (const auto replacement = Lookup(part)) {
          modified = true;
          Replace(&edits, 1, *replacement);
        } else {
          edits.push_back({text->chars[i], 0});
        }
      }
    }
    ch = last;
  }
  if (modified) text->Transform(edits);
}

}  // namespace longqa
