// Trains a sentencepiece model from a text file: for the demo model's vocabulary and for tests that
// need a tokenizer of their own. Free of Abseil headers for the same reason as tokenizer.h.
#pragma once

#include <map>
#include <string>

namespace longqa {

// Trains a model on `input_path` (one sentence per line) and writes `<model_prefix>.model` and
// `<model_prefix>.vocab`. `options` are sentencepiece trainer flags without dashes
// (e.g. {"model_type", "unigram"}); they override the defaults chosen here. Returns false and
// sets *error on failure. Special ids follow RoBERTa: <s> 0, <pad> 1, </s> 2, <unk> 3, and the
// paragraph token <P> is 4 (ModelConfig's SpecialTokens defaults use the same ids).
bool TrainSentencePiece(const std::string& input_path, const std::string& model_prefix,
                        int vocab_size, const std::map<std::string, std::string>& options,
                        std::string* error);

}  // namespace longqa
