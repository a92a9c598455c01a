#include "model/tokenizers/hf/normalizers.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
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
