#include "train/checkpoint.h"

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "model/format/model_folder.h"
#include "model/format/safetensors.h"

namespace longqa {
namespace {

absl::Status WriteTextAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot rename ", tmp, ": ", ec.message()));
  return absl::OkStatus();
}

}  // namespace

bool HasTrainerState(const std::string& dir) {
  return std::filesystem::exists(ModelFilePath(dir, kTrainerStateFile));
}

absl::StatusOr<TrainerState> LoadTrainerState(const std::string& dir) {
  const std::string path = ModelFilePath(dir, kTrainerStateFile);
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  try {
    const auto j = nlohmann::json::parse(text.str());
    TrainerState s;
    s.step = j.at("step").get<int64_t>();
    s.stage = j.at("stage").get<int64_t>();
    s.stage_step = j.at("stage_step").get<int64_t>();
    s.examples_seen = j.value("examples_seen", int64_t{0});
    return s;
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", e.what()));
  }
}

absl::Status SaveModelFolder(const std::string& dir, const ModelConfig& config,
                             const TensorMap& weights, const std::string& tokenizer_dir,
                             int64_t step) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  // Every head is in the training loss: after a step none is untrained any more, and the server
  // should stop warning about heads that import_hf.py initialised at random.
  ModelConfig saved = config;
  if (step > 0) saved.untrained_heads.clear();
  LONGQA_RETURN_IF_ERROR(
      WriteTextAtomically(ModelFilePath(dir, kConfigFile), ModelConfigToJson(saved) + "\n"));
  TensorMap detached;
  for (const auto& [name, t] : weights) detached[name] = t.detach();
  LONGQA_RETURN_IF_ERROR(WriteSafetensors(ModelFilePath(dir, kWeightsFile), detached));
  const std::string source = ModelFilePath(tokenizer_dir, TokenizerFile(config));
  const std::string copy = ModelFilePath(dir, TokenizerFile(config));
  if (!std::filesystem::exists(copy) || !std::filesystem::equivalent(source, copy)) {
    std::filesystem::copy_file(source, copy, std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) return absl::InternalError(absl::StrCat("cannot copy ", source, ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::Status SaveCheckpoint(const std::string& dir, const ModelConfig& config,
                            const TensorMap& weights, const std::string& tokenizer_dir,
                            const AdamW& optimizer, const TrainerState& state) {
  LONGQA_RETURN_IF_ERROR(SaveModelFolder(dir, config, weights, tokenizer_dir, state.step));
  LONGQA_RETURN_IF_ERROR(WriteSafetensors(ModelFilePath(dir, kOptimizerFile), optimizer.State()));
  const nlohmann::json j = {{"step", state.step},
                            {"stage", state.stage},
                            {"stage_step", state.stage_step},
                            {"examples_seen", state.examples_seen}};
  return WriteTextAtomically(ModelFilePath(dir, kTrainerStateFile), j.dump(2) + "\n");
}

}  // namespace longqa
