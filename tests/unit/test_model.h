// Shared fixtures of the model tests: a tiny config, random weights with a spread large enough to
// make attention non-trivial, and a sentencepiece model trained once per test binary.
#pragma once

#include <ATen/ATen.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "model/encoders/window_plan.h"
#include "model/format/config.h"
#include "model/format/weights.h"
#include "model/tokenizers/sentencepiece_tokenizer.h"
#include "model/tokenizers/sentencepiece_trainer.h"

namespace longqa::testing_support {

// d=16, 2 heads: small enough for fp64 references; clusters_per_layer for every C layer.
inline ModelConfig TinyConfig(const std::string& layers, int64_t l, int64_t m,
                              int64_t clusters_per_layer = 4) {
  return ClusterFormerConfig(/*vocab_size=*/120, /*hidden_size=*/16, /*num_heads=*/2,
                             /*intermediate_size=*/24, layers, l, m, clusters_per_layer,
                             /*max_question_tokens=*/40);
}

// An ETC model of TinyConfig's dims: two E layers, radius 3, relative labels clipped at 2.
inline ModelConfig TinyEtcConfig() {
  ModelConfig c = TinyConfig("SS", 16, 12);
  c.architecture = Architecture::kEtc;
  c.layers = "EE";
  c.num_clusters.clear();
  c.etc.radius = 3;
  c.etc.relative_clip = 2;
  c.etc.shared_projections = false;
  return c;
}

// Random weights, with matrices scaled to std 0.3 so attention patterns are far from uniform.
inline TensorMap SpreadWeights(const ModelConfig& c, uint64_t seed) {
  TensorMap w = RandomWeights(c, seed);
  for (auto& [name, t] : w) {
    if (name.find("LayerNorm") == std::string::npos &&
        name.find("centroids") == std::string::npos && t.dim() == 2) {
      t = t * 15.0;
    }
  }
  return w;
}

// A window input of q question pieces (CLS ... SEP as ids 0 and 2) and x context pieces, a
// paragraph token (4) every 17th.
inline WindowInput RandomInput(int64_t q, int64_t x, int64_t vocab, uint64_t seed) {
  std::srand(static_cast<unsigned>(seed));
  WindowInput in;
  in.question.push_back(0);
  for (int64_t i = 0; i < q - 2; ++i) in.question.push_back(5 + std::rand() % (vocab - 5));
  in.question.push_back(2);
  for (int64_t i = 0; i < x; ++i)
    in.context.push_back(i % 17 == 0 ? 4 : 5 + std::rand() % (vocab - 5));
  return in;
}

// A sentencepiece model trained on words that the tests use (vocab at most 100).
inline std::unique_ptr<Tokenizer> TestTokenizer() {
  static const std::string path = [] {
    const auto dir =
        std::filesystem::temp_directory_path() / ("longqa_test_spm_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::ofstream corpus(dir / "corpus.txt");
    const char* words[] = {"the",    "river", "Ada",    "was",      "born",  "in",
                           "Paris",  "city",  "of",     "France",   "which", "country",
                           "where",  "is",    "a",      "mountain", "café",  "naïve",
                           "Zürich", "東京",  "answer", "question", "long",  "document"};
    for (int i = 0; i < 600; ++i) {
      for (int j = 0; j < 10; ++j) corpus << words[(i * 5 + j * 7) % 24] << ' ';
      corpus << '\n';
    }
    corpus.close();
    std::string error;
    if (!TrainSentencePiece((dir / "corpus.txt").string(), (dir / "spm").string(), 100,
                            {{"hard_vocab_limit", "false"}}, &error)) {
      throw std::runtime_error(error);
    }
    return (dir / "spm.model").string();
  }();
  std::string error;
  std::unique_ptr<Tokenizer> tokenizer = SentencePieceTokenizer::Load(path, &error);
  if (tokenizer == nullptr) throw std::runtime_error(error);
  return tokenizer;
}

}  // namespace longqa::testing_support
