// tokenizer.json "model" section: turns one pre-tokenized word into pieces: WordPiece (BERT),
// BPE (GPT-2 / RoBERTa, byte-level or not) and Unigram (XLM-R, sentencepiece models). Offsets
// come from the word's alignments.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "model/tokenizers/hf/normalized_text.h"
#include "model/tokenizers/hf/vocabulary.h"
#include "model/tokenizers/tokenizer.h"
#include "nlohmann/json.hpp"

namespace longqa {

class HfModel {
 public:
  virtual ~HfModel() = default;
  // Appends the word's pieces to *pieces.
  virtual void Tokenize(const NormalizedText& word, std::vector<Piece>* pieces) const = 0;
  const Vocabulary& vocabulary() const { return vocabulary_; }
  Vocabulary* mutable_vocabulary() { return &vocabulary_; }

 protected:
  Vocabulary vocabulary_;
};

absl::StatusOr<std::unique_ptr<HfModel>> MakeHfModel(const nlohmann::json& spec);

}  // namespace longqa
