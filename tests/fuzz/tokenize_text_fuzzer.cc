// Any bytes as a document for the two tokenizers longqa ships: MiniLM's tokenizer.json
// (WordPiece with BERT's normalizer) and the sentencepiece model of models/scratch_etc. Checks
// (fuzz_checks.h): no crash, every piece inside the text, on code point boundaries when the text
// is valid UTF-8 (the server refuses the rest before tokenizing); the text read as one paragraph:
// its table header (model/table_header.h) inside it, on line boundaries.
#include <cstdio>
#include <memory>
#include <string>

#include "model/document.h"
#include "model/table_header.h"
#include "model/tokenizers/hf/hf_tokenizer.h"
#include "model/tokenizers/sentencepiece_tokenizer.h"
#include "tests/fuzz/fuzz_checks.h"

namespace {

std::unique_ptr<longqa::Tokenizer> wordpiece, sentencepiece;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string root = LONGQA_SOURCE_DIR;
  auto hf = longqa::HfTokenizer::Load(root + "/third_party/minilm/tokenizer.json");
  std::string error;
  sentencepiece =
      longqa::SentencePieceTokenizer::Load(root + "/models/scratch_etc/spm.model", &error);
  if (!hf.ok() || sentencepiece == nullptr) {
    std::fprintf(stderr, "tokenize_text_fuzzer: %s %s\n", hf.status().ToString().c_str(),
                 error.c_str());
    std::abort();
  }
  wordpiece = std::move(*hf);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool valid = longqa::IsValidUtf8(text);
  const auto [header_begin, header_end] = longqa::TableHeaderBytes(text);
  if (header_begin < header_end) {
    longqa::fuzz::CheckSpan(text, valid, header_begin, header_end);
    if (header_begin > 0 && text[header_begin - 1] != '\n') {
      longqa::fuzz::Fail("table header starts inside a line", header_begin, header_end);
    }
  } else if (header_begin != 0 || header_end != 0) {
    longqa::fuzz::Fail("no table header is {0, 0}", header_begin, header_end);
  }
  for (const longqa::Tokenizer* tokenizer : {wordpiece.get(), sentencepiece.get()}) {
    std::vector<longqa::Piece> pieces;
    std::string error;
    if (!tokenizer->Encode(text, &pieces, &error)) continue;  // an error is an answer too
    longqa::fuzz::CheckPieces(text, pieces, tokenizer->vocab_size());
    if (valid) {
      for (const longqa::Piece& piece : pieces) {
        longqa::fuzz::CheckSpan(text, true, piece.byte_begin, piece.byte_end);
      }
    }
  }
  return 0;
}
