// Writes a complete model folder with random weights (config.json, model.safetensors, spm.model):
// the random-weight model factory for integration tests, benchmarks and serving before a trained
// model exists. The tokenizer is trained on the given corpus or on generated text.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "model/format/config.h"

namespace longqa {

struct RandomModelSpec {
  std::string architecture = "cluster_former";  // or "etc"
  std::string layers = "SSCS";                  // S/C/N/K/I for cluster_former; E for etc
  int64_t hidden_size = 64;
  int64_t num_heads = 4;
  int64_t intermediate_size = 128;
  int64_t window_tokens = 64;
  int64_t stride_tokens = 48;
  int64_t clusters = 8;     // per C or N layer
  int64_t etc_radius = 16;  // r
  int64_t vocab_size = 400;
  int64_t max_question_tokens = 32;
  bool exact_match_feature = false;
  std::string corpus_path;  // one sentence per line; empty: generated text
  // sentencepiece's normalization_rule_name; "nmt_nfkc" gives the spm.model a
  // precompiled_charsmap (tests build tokenizer.json's Precompiled normalizer from it).
  std::string spm_normalization = "identity";
  uint64_t seed = 1;
};

// The config a spec describes (vocab_size is the tokenizer's actual vocabulary after training).
ModelConfig RandomModelConfig(const RandomModelSpec& spec, int64_t vocab_size);

// Creates `dir` if needed and writes the three files.
absl::Status WriteRandomModel(const RandomModelSpec& spec, const std::string& dir);

}  // namespace longqa
