// Span decoding with logits the fuzzer chooses (NaN, infinities, ties, huge values included): the
// input is a document text, a 0 byte, then float32 logits that fill the type, start, end and
// long-answer scores (and squad windows) of the document's tokens, repeating when short. Both
// decoders (DecodeAnswer, DecodeSquadAnswer). Checks: no crash; spans inside the text, on code
// point boundaries, inside the long answer's paragraph (squad: starting in it); at most n_best
// short answers; DecodeAnswer's short answers inside one table cell.
#include <cstring>
#include <memory>
#include <string>

#include "model/decode.h"
#include "model/decode_squad.h"
#include "model/tokenizers/sentencepiece_tokenizer.h"
#include "tests/fuzz/fuzz_checks.h"

namespace {

std::unique_ptr<longqa::Tokenizer> tokenizer;

// `runs_on`: squad spans may run on past their paragraph's end (qa.proto), but start inside it.
void Check(const longqa::QaAnswer& answer, std::string_view text, int64_t n_best, bool runs_on) {
  if (static_cast<int64_t>(answer.short_answers.size()) > n_best) {
    longqa::fuzz::Fail("more short answers than n_best", answer.short_answers.size(), n_best);
  }
  if (answer.has_long_answer) {
    longqa::fuzz::CheckSpan(text, true, answer.long_answer.byte_begin, answer.long_answer.byte_end);
  }
  for (const longqa::AnswerSpan& span : answer.short_answers) {
    longqa::fuzz::CheckSpan(text, true, span.byte_begin, span.byte_end);
    if (answer.has_long_answer && (span.byte_begin < answer.long_answer.byte_begin ||
                                   (runs_on ? span.byte_begin >= answer.long_answer.byte_end
                                            : span.byte_end > answer.long_answer.byte_end))) {
      longqa::fuzz::Fail("short answer outside its long answer", span.byte_begin, span.byte_end);
    }
  }
}

bool Blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// A short answer that starts on a table row (a line whose first non-blank byte is `|`) holds no
// line end and no cell border: no `|` at the line's first non-blank byte or its end, or with a
// blank beside it.
void CheckInsideTableCell(std::string_view text, const longqa::AnswerSpan& span) {
  const size_t b = static_cast<size_t>(span.byte_begin);
  const size_t line = b == 0 ? 0 : text.find_last_of('\n', b - 1) + 1;  // npos + 1 == 0
  const size_t line_end = std::min(text.find('\n', b), text.size());
  size_t first = line;
  while (first < line_end && (text[first] == ' ' || text[first] == '\t')) ++first;
  if (first == line_end || text[first] != '|') return;
  for (size_t i = b; i < static_cast<size_t>(span.byte_end); ++i) {
    if (text[i] == '\n') {
      longqa::fuzz::Fail("short answer leaves its table row", span.byte_begin, i);
    }
    if (text[i] == '|' &&
        (i == first || i + 1 == line_end || Blank(text[i - 1]) || Blank(text[i + 1]))) {
      longqa::fuzz::Fail("short answer crosses a table cell border", span.byte_begin, i);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::string error;
  tokenizer = longqa::SentencePieceTokenizer::Load(
      std::string(LONGQA_SOURCE_DIR) + "/models/scratch_etc/spm.model", &error);
  if (tokenizer == nullptr) std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* bytes = reinterpret_cast<const char*>(data);
  const char* zero = static_cast<const char*>(std::memchr(bytes, 0, size));
  if (zero == nullptr) return 0;
  const std::string text(bytes, static_cast<size_t>(zero - bytes));
  if (!longqa::IsValidUtf8(text)) return 0;  // the server refuses such text first
  std::vector<float> values((size - text.size() - 1) / sizeof(float));
  if (values.empty()) return 0;
  std::memcpy(values.data(), zero + 1, values.size() * sizeof(float));
  size_t next = 0;
  auto take = [&] { return values[next++ % values.size()]; };

  const auto paragraphs = longqa::SplitParagraphs(text);
  longqa::SpecialTokens special;
  special.paragraph = 4;
  const bool squad = values.size() % 2 == 1;
  auto doc = longqa::TokenizeDocument(*tokenizer, text, paragraphs, special, 4096, !squad);
  if (!doc.ok()) return 0;
  const size_t n = doc->ids.size();
  longqa::RequestLogits logits;
  for (float& t : logits.type_logits) t = take();
  longqa::DecodeOptions options;
  options.max_answer_tokens = 1 + static_cast<int64_t>(data[0] % 40);
  options.n_best = 1 + static_cast<int64_t>(data[size - 1] % 5);
  options.null_threshold = take();
  if (squad) {
    // Windows of 8 tokens, stride 6 (overlapping), as the squad plan makes them.
    for (size_t begin = 0; begin < n; begin += 6) {
      longqa::WindowLogits window;
      window.context_begin = static_cast<int64_t>(begin);
      const size_t length = std::min<size_t>(8, n - begin);
      for (size_t i = 0; i <= length; ++i) {
        window.start.push_back(take());
        window.end.push_back(take());
      }
      logits.windows.push_back(std::move(window));
      if (begin + 8 >= n) break;
    }
    Check(longqa::DecodeSquadAnswer(logits, *doc, text, options), text, options.n_best, true);
  } else {
    for (size_t i = 0; i < n; ++i) {
      logits.start.push_back(take());
      logits.end.push_back(take());
      logits.long_score.push_back(take());
    }
    const longqa::QaAnswer answer = longqa::DecodeAnswer(logits, *doc, text, options);
    Check(answer, text, options.n_best, false);
    for (const longqa::AnswerSpan& span : answer.short_answers) CheckInsideTableCell(text, span);
  }
  return 0;
}
