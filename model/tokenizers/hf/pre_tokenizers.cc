#include "model/tokenizers/hf/pre_tokenizers.h"

#include <unicode/uchar.h>

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "model/tokenizers/hf/unicode_props.h"

namespace longqa {
namespace {

// How each character class of a split is treated: dropped, a word of its own per character, or
// runs of the same class joined into one word.
enum class CharRole { kDrop, kIsolate, kRun };

// Splits every word into runs by role(c), which returns a role and a run class (characters
// join a run only with the same class).
template <typename Role>
void SplitWords(std::vector<NormalizedText>* words, Role role) {
  std::vector<NormalizedText> out;
  out.reserve(words->size() * 2);
  for (const NormalizedText& word : *words) {
    size_t begin = 0;
    int run_class = -1;
    const auto flush = [&](size_t end) {
      if (end > begin) out.push_back(word.Slice(begin, end));
      begin = end;
    };
    for (size_t i = 0; i < word.size(); ++i) {
      const auto [kind, cls] = role(word.chars[i]);
      if (kind == CharRole::kDrop) {
        flush(i);
        begin = i + 1;
        run_class = -1;
      } else if (kind == CharRole::kIsolate) {
        flush(i);
        flush(i + 1);
        run_class = -1;
      } else if (cls != run_class) {
        flush(i);
        run_class = cls;
      }
    }
    flush(word.size());
  }
  *words = std::move(out);
}

// Rust regex's \w: Alphabetic, M*, Nd, Pc and Join_Control.
bool IsWordChar(char32_t c) {
  if (c < 0x80)
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  const auto uc = static_cast<UChar32>(c);
  if (u_hasBinaryProperty(uc, UCHAR_ALPHABETIC) || u_hasBinaryProperty(uc, UCHAR_JOIN_CONTROL)) {
    return true;
  }
  const int8_t category = u_charType(uc);
  return category == U_NON_SPACING_MARK || category == U_ENCLOSING_MARK ||
         category == U_COMBINING_SPACING_MARK || category == U_DECIMAL_DIGIT_NUMBER ||
         category == U_CONNECTOR_PUNCTUATION;
}

class BertPreTokenizer : public HfPreTokenizer {
 public:
  void Split(std::vector<NormalizedText>* words) const override {
    SplitWords(words, [](char32_t c) -> std::pair<CharRole, int> {
      if (unicode::IsWhitespace(c)) return {CharRole::kDrop, 0};
      if (unicode::IsBertPunctuation(c)) return {CharRole::kIsolate, 0};
      return {CharRole::kRun, 0};
    });
  }
};

class WhitespaceSplitPreTokenizer : public HfPreTokenizer {
 public:
  void Split(std::vector<NormalizedText>* words) const override {
    SplitWords(words, [](char32_t c) -> std::pair<CharRole, int> {
      return {unicode::IsWhitespace(c) ? CharRole::kDrop : CharRole::kRun, 0};
    });
  }
};

// The regex \w+|[^\w\s]+: runs of word characters, runs of other non-space characters.
class WhitespacePreTokenizer : public HfPreTokenizer {
 public:
  void Split(std::vector<NormalizedText>* words) const override {
    SplitWords(words, [](char32_t c) -> std::pair<CharRole, int> {
      if (IsWordChar(c)) return {CharRole::kRun, 1};
      if (unicode::IsWhitespace(c)) return {CharRole::kDrop, 0};
      return {CharRole::kRun, 2};
    });
  }
};

class SequencePreTokenizer : public HfPreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<HfPreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  void Split(std::vector<NormalizedText>* words) const override {
    for (const auto& step : steps_) step->Split(words);
  }

 private:
  std::vector<std::unique_ptr<HfPreTokenizer>> steps_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<HfPreTokenizer>> MakeHfPreTokenizer(const nlohmann::json& spec) {
  if (spec.is_null()) return nullptr;
  const std::string type = spec.value("type", "");
  if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  if (type == "WhitespaceSplit") return std::make_unique<WhitespaceSplitPreTokenizer>();
  if (type == "Whitespace") return std::make_unique<WhitespacePreTokenizer>();
  if (type == "Sequence") {
    std::vector<std::unique_ptr<HfPreTokenizer>> steps;
    for (const nlohmann::json& step : spec.at("pretokenizers")) {
      auto made = MakeHfPreTokenizer(step);
      if (!made.ok()) return made.status();
      if (*made != nullptr) steps.push_back(std::move(*made));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(steps));
  }
  return absl::UnimplementedError(
      absl::StrCat("tokenizer.json: pre_tokenizer type \"", type, "\" is not supported"));
}

}  // namespace longqa
