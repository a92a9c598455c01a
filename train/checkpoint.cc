#include "train/checkpoint.h"

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "model/safetensors.h"
#include "model/status_macros.h"

namespace longqa {
namespace {

constexpr char kStateFile[] = "/trainer_state.json";

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

bool HasTrainerState(const std::string& dir) { return std::filesystem::exists(dir + kStateFile); }

absl::StatusOr<TrainerState> LoadTrainerState(const std::string& dir) {
  std::ifstream in(dir + kStateFile);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", dir, kStateFile));
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
    return absl::InvalidArgumentError(absl::StrCat(dir, kStateFile, ": ", e.what()));
  }
}

absl::Status SaveCheckpoint(const std::string& dir, const ModelConfig& config,
                            const TensorMap& weights, const std::string& spm_source,
                            const AdamW& optimizer, const TrainerState& state) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  LONGQA_RETURN_IF_ERROR(
      WriteTextAtomically(dir + "/config.json", ModelConfigToJson(config) + "\n"));
  TensorMap detached;
  for (const auto& [name, t] : weights) detached[name] = t.detach();
  LONGQA_RETURN_IF_ERROR(WriteSafetensors(dir + "/model.safetensors", detached));
  const std::string spm = dir + "/spm.model";
  if (!std::filesystem::exists(spm) || !std::filesystem::equivalent(spm_source, spm)) {
    std::filesystem::copy_file(spm_source, spm, std::filesystem::copy_options::overwrite_existing,
                               ec);
    if (ec)
      return absl::InternalError(absl::StrCat("cannot copy ", spm_source, ": ", ec.message()));
  }
  LONGQA_RETURN_IF_ERROR(WriteSafetensors(dir + "/optimizer.safetensors", optimizer.State()));
  const nlohmann::json j = {{"step", state.step},
                            {"stage", state.stage},
                            {"stage_step", state.stage_step},
                            {"examples_seen", state.examples_seen}};
  return WriteTextAtomically(dir + kStateFile, j.dump(2) + "\n");
}

}  // namespace longqa
