#include "model/tokenizers/hf/models.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "model/tokenizers/hf/unicode_props.h"

namespace longqa {
namespace {

// Greedy longest-match-first WordPiece, as BERT and tokenizers do it: a word longer than
// max_input_chars_per_word, or one with any part that no piece covers, becomes a single unk.
class WordPieceModel : public HfModel {
 public:
  void Tokenize(const NormalizedText& word, std::vector<Piece>* pieces) const override {
    if (word.empty()) return;
    if (static_cast<int64_t>(word.size()) > max_chars_per_word_) {
      pieces->push_back(Whole(word, unk_id_));
      return;
    }
    const std::string utf8 = word.Utf8();
    // Byte offset of each character, and one past the end.
    std::vector<size_t> char_bytes;
    char_bytes.reserve(word.size() + 1);
    size_t bytes = 0;
    for (char32_t c : word.chars) {
      char_bytes.push_back(bytes);
      bytes += unicode::Utf8Length(c);
    }
    char_bytes.push_back(bytes);

    const size_t first_new = pieces->size();
    std::string candidate;
    size_t start = 0;
    while (start < word.size()) {
      int32_t found = -1;
      size_t end = word.size();
      for (; end > start; --end) {
        const std::string_view part(utf8.data() + char_bytes[start],
                                    char_bytes[end] - char_bytes[start]);
        if (start == 0) {
          found = vocabulary_.Find(part);
        } else {
          candidate.assign(prefix_);
          candidate.append(part);
          found = vocabulary_.Find(candidate);
        }
        if (found >= 0) break;
      }
      if (found < 0) {
        pieces->resize(first_new);
        pieces->push_back(Whole(word, unk_id_));
        return;
      }
      const OriginalBytes range = word.OriginalRange(start, end);
      pieces->push_back(Piece{found, range.begin, range.end});
      start = end;
    }
  }

  static absl::StatusOr<std::unique_ptr<HfModel>> Make(const nlohmann::json& spec) {
    auto model = std::make_unique<WordPieceModel>();
    for (const auto& [piece, id] : spec.at("vocab").items()) {
      if (!model->vocabulary_.Add(piece, id.get<int32_t>())) {
        return absl::InvalidArgumentError(
            absl::StrCat("tokenizer.json: WordPiece piece \"", piece, "\" appears twice"));
      }
    }
    model->prefix_ = spec.value("continuing_subword_prefix", "##");
    model->max_chars_per_word_ = spec.value("max_input_chars_per_word", 100);
    const std::string unk = spec.value("unk_token", "[UNK]");
    model->unk_id_ = model->vocabulary_.Find(unk);
    if (model->unk_id_ < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokenizer.json: WordPiece unk_token \"", unk, "\" is not in the vocab"));
    }
    return model;
  }

 private:
  static Piece Whole(const NormalizedText& word, int32_t id) {
    const OriginalBytes range = word.OriginalRange(0, word.size());
    return Piece{id, range.begin, range.end};
  }

  std::string prefix_;
  int64_t max_chars_per_word_ = 100;
  int32_t unk_id_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<HfModel>> MakeHfModel(const nlohmann::json& spec) {
  const std::string type = spec.value("type", "");
  if (type == "WordPiece") return WordPieceModel::Make(spec);
  return absl::UnimplementedError(
      absl::StrCat("tokenizer.json: model type \"", type, "\" is not supported"));
}

}  // namespace longqa
