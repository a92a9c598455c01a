// tokenizer.json "normalizer" section: the text transformations applied before pre-tokenization,
// each keeping NormalizedText's alignments. Supported types: BertNormalizer, Lowercase, NFD,
// StripAccents, Strip, Replace (String or Regex pattern), Precompiled (precompiled.h), Sequence;
// any other type is refused when the file is loaded, by name.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "model/tokenizers/hf/normalized_text.h"
#include "nlohmann/json.hpp"

namespace longqa {

class HfNormalizer {
 public:
  virtual ~HfNormalizer() = default;
  virtual void Normalize(NormalizedText* text) const = 0;
};

// Builds the normalizer a tokenizer.json describes; null JSON means none (returns nullptr).
absl::StatusOr<std::unique_ptr<HfNormalizer>> MakeHfNormalizer(const nlohmann::json& spec);

// The steps, for reuse and tests.
void BertCleanText(NormalizedText* text);
void BertPadChineseChars(NormalizedText* text);
void CanonicalDecompose(NormalizedText* text);  // NFD
void StripNonspacingMarks(NormalizedText* text);
void Lowercase(NormalizedText* text);

}  // namespace longqa
