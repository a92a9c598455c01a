// The sentencepiece tokenizer (a model folder's spm.model) behind the Tokenizer interface. The
// processor stays behind a pimpl: only sentencepiece_tokenizer.cc sees sentencepiece's headers.
#pragma once

#include <memory>
#include <string>

#include "model/tokenizers/tokenizer.h"

namespace longqa {

class SentencePieceTokenizer : public Tokenizer {
 public:
  ~SentencePieceTokenizer() override;
  SentencePieceTokenizer(const SentencePieceTokenizer&) = delete;
  SentencePieceTokenizer& operator=(const SentencePieceTokenizer&) = delete;

  // Loads a sentencepiece model file; on failure returns nullptr and sets *error.
  static std::unique_ptr<SentencePieceTokenizer> Load(const std::string& model_path,
                                                      std::string* error);
  // Loads a model from its serialized bytes.
  static std::unique_ptr<SentencePieceTokenizer> LoadFromBytes(const std::string& model_bytes,
                                                               std::string* error);

  bool Encode(std::string_view text, std::vector<Piece>* pieces, std::string* error) const override;
  int32_t vocab_size() const override;
  int32_t PieceToId(const std::string& piece) const override;
  std::string IdToPiece(int32_t id) const override;

 private:
  struct Impl;
  explicit SentencePieceTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace longqa
