// Training checkpoints. A checkpoint folder is a complete model folder (config.json,
// model.safetensors, spm.model: servable and evaluable as it is) plus optimizer.safetensors (the
// AdamW moments) and trainer_state.json (step, curriculum stage), so training resumes from it on
// any machine, e.g. from a checkpoint committed to the repository.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "model/format/config.h"
#include "model/format/weights.h"
#include "train/adamw.h"

namespace longqa {

struct TrainerState {
  int64_t step = 0;        // optimizer steps done
  int64_t stage = 0;       // curriculum stage (index into --stages)
  int64_t stage_step = 0;  // steps done in this stage
  int64_t examples_seen = 0;
};

bool HasTrainerState(const std::string& dir);
absl::StatusOr<TrainerState> LoadTrainerState(const std::string& dir);

// Writes a servable model folder: config.json (untrained heads cleared once step > 0),
// model.safetensors and the tokenizer file of `tokenizer_dir` (copied unless it is dir).
absl::Status SaveModelFolder(const std::string& dir, const ModelConfig& config,
                             const TensorMap& weights, const std::string& tokenizer_dir,
                             int64_t step);

// Writes the model files, then the optimizer state, then trainer_state.json last (each file
// atomically), so a checkpoint with a state file is complete. The tokenizer file of
// `tokenizer_dir` is copied unless tokenizer_dir is dir.
absl::Status SaveCheckpoint(const std::string& dir, const ModelConfig& config,
                            const TensorMap& weights, const std::string& tokenizer_dir,
                            const AdamW& optimizer, const TrainerState& state);

}  // namespace longqa
