#include "model/tokenizers/hf/normalizers.h"

#include <unicode/uregex.h>
#include <unicode/ustring.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "model/tokenizers/hf/precompiled.h"
#include "model/tokenizers/hf/unicode_props.h"

namespace longqa {
namespace {

using Edits = std::vector<std::pair<char32_t, int>>;

class BertNormalizer : public HfNormalizer {
 public:
  BertNormalizer(bool clean_text, bool chinese_chars, bool strip_accents, bool lowercase)
      : clean_text_(clean_text),
        chinese_chars_(chinese_chars),
        strip_accents_(strip_accents),
        lowercase_(lowercase) {}

  void Normalize(NormalizedText* text) const override {
    if (clean_text_) BertCleanText(text);
    if (chinese_chars_) BertPadChineseChars(text);
    if (strip_accents_) {
      CanonicalDecompose(text);
      StripNonspacingMarks(text);
    }
    if (lowercase_) Lowercase(text);
  }

 private:
  bool clean_text_, chinese_chars_, strip_accents_, lowercase_;
};

// One step given as a function.
class StepNormalizer : public HfNormalizer {
 public:
  explicit StepNormalizer(void (*step)(NormalizedText*)) : step_(step) {}
  void Normalize(NormalizedText* text) const override { step_(text); }

 private:
  void (*step_)(NormalizedText*);
};

class SequenceNormalizer : public HfNormalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<HfNormalizer>> steps)
      : steps_(std::move(steps)) {}
  void Normalize(NormalizedText* text) const override {
    for (const auto& step : steps_) step->Normalize(text);
  }

 private:
  std::vector<std::unique_ptr<HfNormalizer>> steps_;
};

// Strip: whitespace (White_Space) off the left and/or right end; the rest keeps its alignment.
class StripNormalizer : public HfNormalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void Normalize(NormalizedText* text) const override {
    size_t begin = 0, end = text->size();
    if (right_) {
      while (end > 0 && unicode::IsWhitespace(text->chars[end - 1])) --end;
    }
    if (left_) {
      while (begin < end && unicode::IsWhitespace(text->chars[begin])) ++begin;
    }
    if (begin == 0 && end == text->size()) return;
    NormalizedText kept = text->Slice(begin, end);
    kept.origin = text->origin;
    *text = std::move(kept);
  }

 private:
  bool left_, right_;
};

// Replace: every non-overlapping match of a literal string or an ICU regular expression becomes
// `content`, whose characters all take the alignment of the match's last character (tokenizers'
// replace: insertions after removing the match).
class ReplaceNormalizer : public HfNormalizer {
 public:
  static absl::StatusOr<std::unique_ptr<ReplaceNormalizer>> Make(const nlohmann::json& spec) {
    auto made = std::unique_ptr<ReplaceNormalizer>(new ReplaceNormalizer());
    const nlohmann::json& pattern = spec.at("pattern");
    std::string regex;
    if (pattern.contains("String")) {
      regex = pattern.at("String").get<std::string>();
      made->literal_ = true;
    } else if (pattern.contains("Regex")) {
      regex = pattern.at("Regex").get<std::string>();
    } else {
      return absl::UnimplementedError("tokenizer.json: Replace pattern must be String or Regex");
    }
    const std::string content = spec.at("content").get<std::string>();
    for (size_t i = 0; i < content.size();) {
      char32_t c;
      const int length = unicode::DecodeUtf8(content, i, &c);
      if (length == 0)
        return absl::InvalidArgumentError("tokenizer.json: Replace content is not UTF-8");
      made->content_.push_back(c);
      i += static_cast<size_t>(length);
    }
    UErrorCode status = U_ZERO_ERROR;
    UParseError where;
    std::u16string pattern16(regex.size() + 1, u'\0');
    int32_t length16 = 0;
    u_strFromUTF8(reinterpret_cast<UChar*>(pattern16.data()),
                  static_cast<int32_t>(pattern16.size()), &length16, regex.data(),
                  static_cast<int32_t>(regex.size()), &status);
    if (U_SUCCESS(status)) {
      made->regex_ = uregex_open(reinterpret_cast<const UChar*>(pattern16.data()), length16,
                                 made->literal_ ? UREGEX_LITERAL : 0, &where, &status);
    }
    if (U_FAILURE(status)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokenizer.json: Replace pattern \"", regex,
                       "\" is not a regular expression ICU reads: ", u_errorName(status)));
    }
    return made;
  }
  ~ReplaceNormalizer() override {
    if (regex_ != nullptr) uregex_close(regex_);
  }

  void Normalize(NormalizedText* text) const override {
    if (text->empty()) return;
    // ICU matches UTF-16: map its indices back to characters.
    std::u16string utf16;
    std::vector<size_t> char_of_unit;
    for (size_t i = 0; i < text->size(); ++i) {
      const char32_t c = text->chars[i];
      if (c >= 0x10000) {
        utf16.push_back(static_cast<char16_t>(0xD800 + ((c - 0x10000) >> 10)));
        utf16.push_back(static_cast<char16_t>(0xDC00 + ((c - 0x10000) & 0x3FF)));
        char_of_unit.insert(char_of_unit.end(), 2, i);
      } else {
        utf16.push_back(static_cast<char16_t>(c));
        char_of_unit.push_back(i);
      }
    }
    char_of_unit.push_back(text->size());
    UErrorCode status = U_ZERO_ERROR;
    URegularExpression* regex = uregex_clone(regex_, &status);  // a matcher per call: thread-safe
    uregex_setText(regex, reinterpret_cast<const UChar*>(utf16.data()),
                   static_cast<int32_t>(utf16.size()), &status);
    NormalizedText out;
    out.origin = text->origin;
    size_t copied = 0;
    while (U_SUCCESS(status) && uregex_findNext(regex, &status)) {
      const size_t begin = char_of_unit[static_cast<size_t>(uregex_start(regex, 0, &status))];
      const size_t end = char_of_unit[static_cast<size_t>(uregex_end(regex, 0, &status))];
      if (end == begin) continue;  // tokenizers skips empty matches
      for (; copied < begin; ++copied) {
        out.chars.push_back(text->chars[copied]);
        out.align.push_back(text->align[copied]);
      }
      for (char32_t c : content_) {
        out.chars.push_back(c);
        out.align.push_back(text->align[end - 1]);
      }
      copied = end;
    }
    uregex_close(regex);
    for (; copied < text->size(); ++copied) {
      out.chars.push_back(text->chars[copied]);
      out.align.push_back(text->align[copied]);
    }
    *text = std::move(out);
  }

 private:
  ReplaceNormalizer() = default;
  bool literal_ = false;
  std::u32string content_;
  URegularExpression* regex_ = nullptr;
};

bool BoolOr(const nlohmann::json& spec, const char* key, bool fallback) {
  const auto it = spec.find(key);
  return it == spec.end() || it->is_null() ? fallback : it->get<bool>();
}

}  // namespace

void BertCleanText(NormalizedText* text) {
  text->Filter([](char32_t c) { return c != 0 && c != 0xFFFD && !unicode::IsBertControl(c); });
  for (char32_t& c : text->chars) {
    if (unicode::IsWhitespace(c)) c = ' ';
  }
}

void BertPadChineseChars(NormalizedText* text) {
  if (std::none_of(text->chars.begin(), text->chars.end(), unicode::IsChineseChar)) return;
  Edits edits;
  edits.reserve(text->size() + 16);
  for (char32_t c : text->chars) {
    if (unicode::IsChineseChar(c)) {
      edits.insert(edits.end(), {{U' ', 0}, {c, 1}, {U' ', 1}});
    } else {
      edits.push_back({c, 0});
    }
  }
  text->Transform(edits);
}

void CanonicalDecompose(NormalizedText* text) {
  if (std::all_of(text->chars.begin(), text->chars.end(), [](char32_t c) { return c < 0xC0; })) {
    return;
  }
  // As tokenizers' NFD does: each character's decomposition (the first piece replaces it, the
  // others are inserted), then canonical reordering of each run of non-starters by combining
  // class, a stable sort that moves the change tags along with their characters.
  struct Pending {
    uint8_t combining_class;
    char32_t c;
    int change;
  };
  std::vector<Pending> out;
  out.reserve(text->size());
  size_t run_begin = 0;  // first non-starter of the current run
  const auto close_run = [&] {
    std::stable_sort(out.begin() + run_begin, out.end(), [](const Pending& a, const Pending& b) {
      return a.combining_class < b.combining_class;
    });
  };
  std::u32string pieces;
  for (char32_t c : text->chars) {
    pieces.clear();
    unicode::AppendCanonicalDecomposition(c, &pieces);
    for (size_t k = 0; k < pieces.size(); ++k) {
      const uint8_t combining_class = unicode::CombiningClass(pieces[k]);
      if (combining_class == 0) {
        close_run();
        run_begin = out.size() + 1;
      }
      out.push_back({combining_class, pieces[k], k == 0 ? 0 : 1});
    }
  }
  close_run();
  Edits edits;
  edits.reserve(out.size());
  for (const Pending& p : out) edits.push_back({p.c, p.change});
  text->Transform(edits);
}

void StripNonspacingMarks(NormalizedText* text) {
  text->Filter([](char32_t c) { return !unicode::IsNonspacingMark(c); });
}

void Lowercase(NormalizedText* text) {
  bool simple = true;
  for (char32_t& c : text->chars) {
    if (c < 0x80) {
      if (c >= 'A' && c <= 'Z') c += 32;
    } else {
      simple = false;
    }
  }
  if (simple) return;
  Edits edits;
  edits.reserve(text->size());
  std::u32string lower;
  for (char32_t c : text->chars) {
    lower.clear();
    unicode::AppendLowercase(c, &lower);
    for (size_t k = 0; k < lower.size(); ++k) edits.push_back({lower[k], k == 0 ? 0 : 1});
  }
  text->Transform(edits);
}

absl::StatusOr<std::unique_ptr<HfNormalizer>> MakeHfNormalizer(const nlohmann::json& spec) {
  if (spec.is_null()) return nullptr;
  const std::string type = spec.value("type", "");
  if (type == "BertNormalizer") {
    const bool lowercase = BoolOr(spec, "lowercase", true);
    return std::make_unique<BertNormalizer>(BoolOr(spec, "clean_text", true),
                                            BoolOr(spec, "handle_chinese_chars", true),
                                            BoolOr(spec, "strip_accents", lowercase), lowercase);
  }
  if (type == "Lowercase") return std::make_unique<StepNormalizer>(&Lowercase);
  if (type == "NFD") return std::make_unique<StepNormalizer>(&CanonicalDecompose);
  if (type == "StripAccents") return std::make_unique<StepNormalizer>(&StripNonspacingMarks);
  if (type == "Strip") {
    return std::make_unique<StripNormalizer>(BoolOr(spec, "strip_left", true),
                                             BoolOr(spec, "strip_right", true));
  }
  if (type == "Replace") {
    auto made = ReplaceNormalizer::Make(spec);
    if (!made.ok()) return made.status();
    return std::unique_ptr<HfNormalizer>(std::move(*made));
  }
  if (type == "Precompiled") {
    std::string charsmap;
    if (!absl::Base64Unescape(spec.value("precompiled_charsmap", std::string()), &charsmap)) {
      return absl::InvalidArgumentError(
          "tokenizer.json: Precompiled precompiled_charsmap is not base64");
    }
    auto made = PrecompiledNormalizer::Parse(charsmap);
    if (!made.ok()) return made.status();
    return std::unique_ptr<HfNormalizer>(std::move(*made));
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<HfNormalizer>> steps;
    for (const nlohmann::json& step : spec.at("normalizers")) {
      auto made = MakeHfNormalizer(step);
      if (!made.ok()) return made.status();
      if (*made != nullptr) steps.push_back(std::move(*made));
    }
    return std::make_unique<SequenceNormalizer>(std::move(steps));
  }
  return absl::UnimplementedError(
      absl::StrCat("tokenizer.json: normalizer type \"", type, "\" is not supported"));
}

}  // namespace longqa
