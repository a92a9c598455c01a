// A gold example (the JSONL `longqa eval` reads, docs/cli.md, plus "kind") turned into what the
// trainer needs: the tokenized request and its targets as token indices.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/engine.h"

namespace longqa {

struct TrainingExample {
  std::string example_id;
  std::string kind;  // the generator's question kind ("one_hop", ...); "" when absent
  PreparedRequest prepared;
  int64_t answer_type = 0;      // AnswerType: null, yes, no, short, long only
  int64_t long_paragraph = -1;  // gold paragraph index, or -1 (no answer)
  int64_t short_start = -1;     // first and last token of the short answer, or -1
  int64_t short_end = -1;
  ByteRange long_bytes{-1, -1};  // gold spans in the text, for exact-match scoring
  ByteRange short_bytes{-1, -1};
  // Paragraphs whose facts the answer needs (JSONL "supporting", byte ranges of paragraphs, as
  // tools/make_dataset.py writes them), ascending; empty when the line has none. Read by the
  // supporting-fact loss of ETC models with the head.
  std::vector<int64_t> supporting_paragraphs;
};

// Parses one gold line and tokenizes it with the engine's tokenizer. Errors name what is wrong
// (a long answer that is not a paragraph, a short answer outside it).
absl::StatusOr<TrainingExample> MakeTrainingExample(const std::string& json_line,
                                                    const Engine& engine);

// Every line of a JSONL file; `limit` > 0 keeps the first `limit` examples.
absl::StatusOr<std::vector<TrainingExample>> LoadTrainingExamples(const std::string& path,
                                                                  const Engine& engine,
                                                                  int64_t limit = 0);

}  // namespace longqa
