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

// GPT-2's byte-level pre-tokenizer: an optional prefix space, the split by the regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (scanned by hand with the same alternation order), then every UTF-8 byte mapped to the
// printable character that stands for it (the first byte replaces the character, the others
// are inserted, so all keep its alignment).
class ByteLevelPreTokenizer : public HfPreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {}

  void Split(std::vector<NormalizedText>* words) const override {
    std::vector<NormalizedText> out;
    for (NormalizedText& word : *words) {
      if (add_prefix_space_ && !word.empty() && word.chars[0] != U' ') word.Prepend(U' ');
      if (!use_regex_) {
        out.push_back(std::move(word));
        continue;
      }
      for (size_t begin = 0; begin < word.size();) {
        const size_t end = MatchAt(word.chars, begin);
        out.push_back(word.Slice(begin, end));
        begin = end;
      }
    }
    for (NormalizedText& word : out) MapBytes(&word);
    *words = std::move(out);
  }

 private:
  // [^\s\p{L}\p{N}]
  static bool IsOther(char32_t c) {
    return !unicode::IsWhitespace(c) && !unicode::IsLetter(c) && !unicode::IsNumber(c);
  }

  // The end of the regex's match at `i` (every position matches something).
  static size_t MatchAt(const std::u32string& s, size_t i) {
    const size_t n = s.size();
    if (s[i] == U'\'' && i + 1 < n) {
      const char32_t d = s[i + 1];
      if (d == U's' || d == U't' || d == U'm' || d == U'd') return i + 2;
      if (i + 2 < n && ((d == U'r' && s[i + 2] == U'e') || (d == U'v' && s[i + 2] == U'e') ||
                        (d == U'l' && s[i + 2] == U'l'))) {
        return i + 3;
      }
    }
    const size_t j = s[i] == U' ' && i + 1 < n ? i + 1 : i;
    for (bool (*in_class)(char32_t) : {&unicode::IsLetter, &unicode::IsNumber, &IsOther}) {
      if (in_class(s[j])) {
        size_t k = j;
        while (k < n && in_class(s[k])) ++k;
        return k;
      }
    }
    // Whitespace: a run that ends the text, or all but its last character (which then leads
    // the next word), or a single character.
    size_t k = i;
    while (k < n && unicode::IsWhitespace(s[k])) ++k;
    if (k == n || k - i == 1) return k;
    return k - 1;
  }

  static void MapBytes(NormalizedText* word) {
    std::vector<std::pair<char32_t, int>> edits;
    edits.reserve(word->size() * 2);
    std::string bytes;
    for (char32_t c : word->chars) {
      bytes.clear();
      unicode::AppendUtf8(c, &bytes);
      for (size_t b = 0; b < bytes.size(); ++b) {
        edits.push_back({ByteToChar(static_cast<unsigned char>(bytes[b])), b == 0 ? 0 : 1});
      }
    }
    word->Transform(edits);
  }

  bool add_prefix_space_, use_regex_;
};

// sentencepiece's word boundaries: spaces become the replacement character ("▁"), one is put
// before the text (always, or only before the text's first segment, or never), and the text
// splits before each replacement character.
class MetaspacePreTokenizer : public HfPreTokenizer {
 public:
  enum class Prepend { kAlways, kFirst, kNever };
  MetaspacePreTokenizer(char32_t replacement, Prepend prepend, bool split)
      : replacement_(replacement), prepend_(prepend), split_(split) {}

  void Split(std::vector<NormalizedText>* words) const override {
    std::vector<NormalizedText> out;
    for (NormalizedText& word : *words) {
      if (word.empty()) continue;
      for (char32_t& c : word.chars) {
        if (c == U' ') c = replacement_;
      }
      const bool at_text_start = word.origin == 0;
      if (word.chars[0] != replacement_ &&
          (prepend_ == Prepend::kAlways || (prepend_ == Prepend::kFirst && at_text_start))) {
        word.Prepend(replacement_);
      }
      if (!split_) {
        out.push_back(std::move(word));
        continue;
      }
      size_t begin = 0;
      for (size_t i = 1; i <= word.size(); ++i) {
        if (i == word.size() || word.chars[i] == replacement_) {
          out.push_back(word.Slice(begin, i));
          begin = i;
        }
      }
    }
    *words = std::move(out);
  }

 private:
  char32_t replacement_;
  Prepend prepend_;
  bool split_;
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

char32_t ByteToChar(unsigned char byte) {
  // GPT-2's table: printable Latin-1 bytes stand for themselves; the other 68 bytes, in order,
  // for U+0100 onwards.
  static const std::vector<char32_t> table = [] {
    std::vector<char32_t> t(256);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      t[b] = printable ? static_cast<char32_t>(b) : next++;
    }
    return t;
  }();
  return table[byte];
}

absl::StatusOr<std::unique_ptr<HfPreTokenizer>> MakeHfPreTokenizer(const nlohmann::json& spec) {
  if (spec.is_null()) return nullptr;
  const std::string type = spec.value("type", "");
  if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  if (type == "WhitespaceSplit") return std::make_unique<WhitespaceSplitPreTokenizer>();
  if (type == "Whitespace") return std::make_unique<WhitespacePreTokenizer>();
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevelPreTokenizer>(spec.value("add_prefix_space", true),
                                                   spec.value("use_regex", true));
  }
  if (type == "Metaspace") {
    const std::u32string replacement =
        NormalizedText::FromUtf8(spec.value("replacement", "\u2581")).chars;
    if (replacement.size() != 1) {
      return absl::InvalidArgumentError(
          "tokenizer.json: Metaspace replacement must be one character");
    }
    // tokenizers >= 0.19 writes prepend_scheme; older files add_prefix_space.
    auto prepend = spec.value("add_prefix_space", true) ? MetaspacePreTokenizer::Prepend::kAlways
                                                        : MetaspacePreTokenizer::Prepend::kNever;
    const std::string scheme = spec.value("prepend_scheme", "");
    if (scheme == "first") prepend = MetaspacePreTokenizer::Prepend::kFirst;
    if (scheme == "never") prepend = MetaspacePreTokenizer::Prepend::kNever;
    if (scheme == "always") prepend = MetaspacePreTokenizer::Prepend::kAlways;
    return std::make_unique<MetaspacePreTokenizer>(replacement[0], prepend,
                                                   spec.value("split", true));
  }
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
