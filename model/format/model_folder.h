// A model folder's file names, in one place, and loading all of it: config.json, the weights and
// the tokenizer, checked against each other. Trainer checkpoints add two files of their own.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model/format/config.h"
#include "model/format/weights.h"
#include "model/tokenizers/tokenizer.h"

namespace longqa {

inline constexpr char kConfigFile[] = "config.json";
inline constexpr char kWeightsFile[] = "model.safetensors";
inline constexpr char kSentencePieceFile[] = "spm.model";
// A Hugging Face tokenizer (model/tokenizers/hf/hf_tokenizer.h), as tools/import_hf.py copies it.
inline constexpr char kHfTokenizerFile[] = "tokenizer.json";
// Optional: English text like the documents the model will answer about, which int8 layers are
// calibrated on at load (model/encoders/int8_calibration.h; absent: plain rounding).
inline constexpr char kInt8CalibrationFile[] = "calibration.txt";
// Trainer checkpoints only (train/checkpoint.h): AdamW moments and the trainer's position.
inline constexpr char kOptimizerFile[] = "optimizer.safetensors";
inline constexpr char kTrainerStateFile[] = "trainer_state.json";

// dir + "/" + file.
std::string ModelFilePath(const std::string& dir, const std::string& file);

// The tokenizer a model folder ships; INVALID_ARGUMENT when it is missing, unreadable or has more
// pieces than the config's vocabulary.
absl::StatusOr<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const std::string& dir,
                                                              const ModelConfig& config);
// The file holding the folder's tokenizer (copied along by checkpoints).
std::string TokenizerFile(const ModelConfig& config);

struct ModelFolder {
  ModelConfig config;
  TensorMap weights;  // f32, CPU
  std::unique_ptr<Tokenizer> tokenizer;
  std::string int8_calibration_text;  // kInt8CalibrationFile's text; empty where there is none
};

// Loads and validates a whole model folder.
absl::StatusOr<ModelFolder> LoadModelFolder(const std::string& dir);

}  // namespace longqa
