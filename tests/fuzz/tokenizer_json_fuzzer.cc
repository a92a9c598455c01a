// Any bytes as a tokenizer.json (a model folder a user brings): parsed, and when accepted, run on
// a fixed text of mixed scripts. Checks: no crash and no sanitizer report on any file; the
// pieces of an accepted one inside the text (fuzz_checks.h).
#include <string>

#include "model/tokenizers/hf/hf_tokenizer.h"
#include "tests/fuzz/fuzz_checks.h"

namespace {

constexpr std::string_view kText =
    "  The ÉLAN of naïve café-goers, 北京是中国的首都; עברית ערבית العربية "
    "👨‍👩‍👧 "
    "e\xCC\x81 "
    "ＡＢＣ１２３ ``quoted'' a_very_long_word_without_any_break_at_all_in_it\t\x01\n\n<mask> [SEP]";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto tokenizer =
      longqa::HfTokenizer::Parse(std::string(reinterpret_cast<const char*>(data), size));
  if (!tokenizer.ok()) return 0;
  std::vector<longqa::Piece> pieces;
  std::string error;
  if ((*tokenizer)->Encode(kText, &pieces, &error)) {
    longqa::fuzz::CheckPieces(kText, pieces, (*tokenizer)->vocab_size());
  }
  return 0;
}
