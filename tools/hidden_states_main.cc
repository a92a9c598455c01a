// longqa-hidden-states: the encoder's hidden states for given token ids, after the embeddings and
// after every layer, written as safetensors ("embeddings", "layer.1" ... "layer.L", each
// [tokens, d]). The ids run as one Cluster-Former window (the first --question_tokens ids are
// the question), which is plain full attention with positions 0..n-1: the same computation as a
// Hugging Face encoder on the same ids, so tests compare the two layer by layer
// (tests/integration/test_import_hf.py). Reads config.json and the weights; no tokenizer needed.
#include <ATen/ATen.h>

#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "model/encoders/cluster_former.h"
#include "model/format/model_folder.h"
#include "model/format/safetensors.h"

ABSL_FLAG(std::string, model_dir, "", "Model folder (a cluster_former model of S layers)");
ABSL_FLAG(std::string, ids, "", "Comma-separated token ids, question first");
ABSL_FLAG(int64_t, question_tokens, 1, "How many of the ids are the question (at least 1)");
ABSL_FLAG(std::string, out, "", "Output safetensors file");

namespace longqa {
namespace {

absl::Status Run() {
  const std::string dir = absl::GetFlag(FLAGS_model_dir);
  LONGQA_ASSIGN_OR_RETURN(const ModelConfig config,
                          LoadModelConfig(ModelFilePath(dir, kConfigFile)));
  if (config.architecture != Architecture::kClusterFormer ||
      config.layers.find('C') != std::string::npos) {
    return absl::InvalidArgumentError("hidden states need a cluster_former model of S layers");
  }
  LONGQA_ASSIGN_OR_RETURN(const TensorMap weights,
                          LoadWeights(ModelFilePath(dir, kWeightsFile), config));
  std::vector<int32_t> ids;
  for (absl::string_view part : absl::StrSplit(absl::GetFlag(FLAGS_ids), ',', absl::SkipEmpty())) {
    int32_t id = 0;
    if (!absl::SimpleAtoi(part, &id) || id < 0 || id >= config.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("bad token id '", part, "'"));
    }
    ids.push_back(id);
  }
  const int64_t q = absl::GetFlag(FLAGS_question_tokens);
  const int64_t n = static_cast<int64_t>(ids.size());
  if (q < 1 || q >= n || n - q > config.window_tokens || q - 2 > config.max_question_tokens) {
    return absl::InvalidArgumentError(
        "need 1 <= question_tokens < ids, and the rest within one window");
  }
  WindowInput input;
  input.question.assign(ids.begin(), ids.begin() + q);
  input.context.assign(ids.begin() + q, ids.end());
  const WindowPlan plan =
      PlanWindows({input}, config.window_tokens, config.stride_tokens, config.special.pad);
  // H̄ row of each input token, in input order (the one window's slots).
  const at::Tensor rows =
      at::tensor(std::vector<int64_t>(plan.window_index.begin(), plan.window_index.begin() + n));

  at::InferenceMode guard;
  TensorMap out;
  std::vector<int64_t> positions(n);
  for (int64_t i = 0; i < n; ++i) positions[i] = i + config.position_offset;
  const Embeddings embeddings(weights, config);
  out["embeddings"] =
      embeddings
          .Forward(at::tensor(std::vector<int64_t>(ids.begin(), ids.end())).unsqueeze(0),
                   at::tensor(positions).unsqueeze(0), at::Tensor())
          .squeeze(0)
          .contiguous();
  for (int64_t layer = 1; layer <= config.num_layers(); ++layer) {
    ModelConfig first = config;
    first.layers = config.layers.substr(0, layer);
    const ClusterFormerEncoder encoder(first, weights);
    out[absl::StrCat("layer.", layer)] =
        encoder.Forward(plan, at::kCPU).index_select(0, rows).contiguous();
  }
  return WriteSafetensors(absl::GetFlag(FLAGS_out), out);
}

}  // namespace
}  // namespace longqa

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Writes an encoder's hidden states: longqa-hidden-states --model_dir DIR --ids 1,2,3 "
      "--question_tokens 1 --out states.safetensors");
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = longqa::Run();
  if (!status.ok()) {
    std::cerr << "longqa-hidden-states: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
