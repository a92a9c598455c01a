#include "tools/random_model.h"

#include <filesystem>
#include <fstream>
#include <random>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "model/format/model_folder.h"
#include "model/format/safetensors.h"
#include "model/format/weights.h"
#include "model/tokenizers/sentencepiece_tokenizer.h"
#include "model/tokenizers/sentencepiece_trainer.h"

namespace longqa {
namespace {

// Pseudo-words from syllables: enough distinct strings for a vocabulary of a few hundred pieces.
void WriteGeneratedCorpus(const std::string& path, uint64_t seed) {
  static const char* kSyllables[] = {"ka", "lo",  "mi",  "ne",  "ru",  "sa", "ti",
                                     "vo", "ze",  "po",  "an",  "el",  "is", "or",
                                     "un", "qua", "bri", "dex", "fol", "gun"};
  std::mt19937_64 rng(seed);
  std::ofstream out(path);
  for (int line = 0; line < 3000; ++line) {
    const int words = 6 + static_cast<int>(rng() % 10);
    for (int w = 0; w < words; ++w) {
      const int syllables = 1 + static_cast<int>(rng() % 3);
      for (int s = 0; s < syllables; ++s) out << kSyllables[rng() % 20];
      out << (w + 1 < words ? " " : ".\n");
    }
  }
}

}  // namespace

ModelConfig RandomModelConfig(const RandomModelSpec& spec, int64_t vocab_size) {
  ModelConfig c = ClusterFormerConfig(vocab_size, spec.hidden_size, spec.num_heads,
                                      spec.intermediate_size, spec.layers, spec.window_tokens,
                                      spec.stride_tokens, spec.clusters, spec.max_question_tokens);
  c.exact_match_feature = spec.exact_match_feature;
  if (spec.architecture == "etc") {
    c.architecture = Architecture::kEtc;
    c.num_clusters.clear();
    c.etc.radius = spec.etc_radius;
  }
  return c;
}

absl::Status WriteRandomModel(const RandomModelSpec& spec, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  std::string corpus = spec.corpus_path;
  if (corpus.empty()) {
    corpus = dir + "/.corpus.txt";
    WriteGeneratedCorpus(corpus, spec.seed);
  }
  std::string error;
  if (!TrainSentencePiece(
          corpus, dir + "/spm", static_cast<int>(spec.vocab_size),
          {{"hard_vocab_limit", "false"}, {"normalization_rule_name", spec.spm_normalization}},
          &error)) {
    return absl::InternalError(error);
  }
  if (spec.corpus_path.empty()) std::filesystem::remove(corpus, ec);
  std::filesystem::remove(dir + "/spm.vocab", ec);
  auto tokenizer = SentencePieceTokenizer::Load(ModelFilePath(dir, kSentencePieceFile), &error);
  if (tokenizer == nullptr) return absl::InternalError(error);
  const ModelConfig config = RandomModelConfig(spec, tokenizer->vocab_size());
  LONGQA_RETURN_IF_ERROR(ValidateModelConfig(config));
  std::ofstream(ModelFilePath(dir, kConfigFile)) << ModelConfigToJson(config) << "\n";
  return WriteSafetensors(ModelFilePath(dir, kWeightsFile), RandomWeights(config, spec.seed));
}

}  // namespace longqa
