// A Hugging Face tokenizer.json behind the Tokenizer interface: added (special) tokens matched in
// the raw text, then normalizer -> pre-tokenizer -> model on the text between them, with every
// piece's offsets in bytes of the caller's text. Pieces and offsets equal those of the Python
// `tokenizers` package's encode(text, add_special_tokens=False); the post-processor's special
// tokens are the model's business (model/document.cc adds CLS/SEP itself).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/tokenizers/hf/models.h"
#include "model/tokenizers/hf/normalizers.h"
#include "model/tokenizers/hf/pre_tokenizers.h"
#include "model/tokenizers/tokenizer.h"

namespace longqa {

class HfTokenizer : public Tokenizer {
 public:
  static absl::StatusOr<std::unique_ptr<HfTokenizer>> Load(const std::string& path);
  static absl::StatusOr<std::unique_ptr<HfTokenizer>> Parse(const std::string& json_text);

  bool Encode(std::string_view text, std::vector<Piece>* pieces, std::string* error) const override;
  int32_t vocab_size() const override;
  int32_t PieceToId(const std::string& piece) const override;
  std::string IdToPiece(int32_t id) const override;

 private:
  struct AddedToken {
    std::string content;
    int32_t id = 0;
    bool lstrip = false;  // the match takes in the whitespace before it
    bool rstrip = false;  // ... and after it
  };
  HfTokenizer() = default;
  // The longest added token matching at text[pos], or nullptr.
  const AddedToken* AddedTokenAt(std::string_view text, size_t pos) const;
  // Normalizes, pre-tokenizes and tokenizes text[begin, end).
  // Appends the pieces of text[begin, end); each pre-tokenized word takes the next number of
  // *next_word.
  void EncodeSegment(std::string_view text, size_t begin, size_t end, int64_t* next_word,
                     std::vector<Piece>* pieces) const;

  // The byte-level post-processor's offset trimming (ByteLevel / RobertaProcessing with
  // trim_offsets): a piece's offsets leave out the spaces its string starts or ends with.
  // Offsets move by one character of the caller's text per space, as tokenizers does when
  // offsets are characters (its Python API, hence transformers); never inside a character.
  void TrimOffsets(std::string_view text, std::vector<Piece>* pieces) const;

  bool trim_offsets_ = false;
  bool trim_keeps_prefix_space_ = false;  // the post-processor's add_prefix_space
  // With trim_offsets_, per id: the spaces its piece starts and ends with (counted at load, not
  // per piece of every request).
  std::vector<std::pair<int32_t, int32_t>> edge_spaces_;
  std::vector<AddedToken> added_;
  std::vector<std::vector<int>> added_by_first_byte_;  // indexes into added_, 256 lists
  std::unique_ptr<HfNormalizer> normalizer_;
  std::unique_ptr<HfPreTokenizer> pre_tokenizer_;
  std::unique_ptr<HfModel> model_;
};

}  // namespace longqa
