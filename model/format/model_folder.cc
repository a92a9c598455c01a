#include "model/format/model_folder.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/read_file.h"
#include "base/status_macros.h"
#include "model/tokenizers/hf/hf_tokenizer.h"
#include "model/tokenizers/sentencepiece_tokenizer.h"

namespace longqa {

std::string ModelFilePath(const std::string& dir, const std::string& file) {
  return absl::StrCat(dir, "/", file);
}

std::string TokenizerFile(const ModelConfig& config) { return config.tokenizer; }

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const std::string& dir,
                                                              const ModelConfig& config) {
  const std::string path = ModelFilePath(dir, TokenizerFile(config));
  std::unique_ptr<Tokenizer> tokenizer;
  if (config.tokenizer == kHfTokenizerFile) {
    LONGQA_ASSIGN_OR_RETURN(tokenizer, HfTokenizer::Load(path));
  } else {  // kSentencePieceFile; config validation allows no other
    std::string error;
    tokenizer = SentencePieceTokenizer::Load(path, &error);
    if (tokenizer == nullptr) return absl::InvalidArgumentError(error);
  }
  if (tokenizer->vocab_size() > config.vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(path, " has ", tokenizer->vocab_size(),
                                                   " pieces but config vocab_size is ",
                                                   config.vocab_size));
  }
  return tokenizer;
}

absl::StatusOr<ModelFolder> LoadModelFolder(const std::string& dir) {
  ModelFolder folder;
  LONGQA_ASSIGN_OR_RETURN(folder.config, LoadModelConfig(ModelFilePath(dir, kConfigFile)));
  LONGQA_ASSIGN_OR_RETURN(folder.weights,
                          LoadWeights(ModelFilePath(dir, kWeightsFile), folder.config));
  LONGQA_ASSIGN_OR_RETURN(folder.tokenizer, LoadModelTokenizer(dir, folder.config));
  const std::string calibration = ModelFilePath(dir, kInt8CalibrationFile);
  if (std::filesystem::exists(calibration)) {
    LONGQA_ASSIGN_OR_RETURN(folder.int8_calibration_text,
                            ReadFile(calibration, "int8 calibration"));
  }
  return folder;
}

}  // namespace longqa
