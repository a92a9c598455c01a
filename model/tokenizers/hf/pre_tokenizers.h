// tokenizer.json "pre_tokenizer" section: splits normalized text into words (each keeping its
// alignments) that the model then tokenizes one by one. Supported types: BertPreTokenizer,
// ByteLevel (GPT-2 / RoBERTa), Metaspace (sentencepiece models), Whitespace, WhitespaceSplit,
// Sequence; any other type is refused when the file is loaded.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "model/tokenizers/hf/normalized_text.h"
#include "nlohmann/json.hpp"

namespace longqa {

class HfPreTokenizer {
 public:
  virtual ~HfPreTokenizer() = default;
  // Replaces each word of *words by the words it splits into.
  virtual void Split(std::vector<NormalizedText>* words) const = 0;
};

// Builds the pre-tokenizer a tokenizer.json describes; null JSON means none (returns nullptr).
absl::StatusOr<std::unique_ptr<HfPreTokenizer>> MakeHfPreTokenizer(const nlohmann::json& spec);

// GPT-2's byte-to-character map of the byte-level pre-tokenizer.
char32_t ByteToChar(unsigned char byte);

}  // namespace longqa
