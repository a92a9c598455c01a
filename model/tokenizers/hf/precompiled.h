// The Precompiled normalizer of tokenizer.json (XLM-R, mBART, T5...): sentencepiece's compiled
// normalization rules (e.g. nmt_nfkc), a double-array trie from UTF-8 byte strings to
// replacements, read as the tokenizers crate reads it (spm_precompiled): each extended grapheme
// cluster shorter than 6 bytes is looked up whole, else (or when absent) each of its characters;
// a lookup takes the shortest key of the trie that prefixes the bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/tokenizers/hf/normalizers.h"

namespace longqa {

class PrecompiledNormalizer : public HfNormalizer {
 public:
  // `charsmap`: the decoded bytes of "precompiled_charsmap" (little-endian u32 trie size in
  // bytes, the trie's u32 units, then NUL-terminated replacement strings).
  static absl::StatusOr<std::unique_ptr<PrecompiledNormalizer>> Parse(std::string_view charsmap);

  void Normalize(NormalizedText* text) const override;

  // The replacement for `bytes`, when a key of the trie prefixes them (the shortest such key).
  std::optional<std::string_view> Lookup(std::string_view bytes) const;

 private:
  std::vector<uint32_t> trie_;
  std::string replacements_;
};

}  // namespace longqa
