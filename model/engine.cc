#include "model/engine.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "kernels/ops.h"
#include "model/status_macros.h"

namespace longqa {

absl::StatusOr<std::unique_ptr<Engine>> Engine::LoadFromDir(const std::string& dir,
                                                            const EngineOptions& options) {
  LONGQA_ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig(dir + "/config.json"));
  LONGQA_ASSIGN_OR_RETURN(TensorMap weights, LoadWeights(dir + "/model.safetensors", config));
  std::string error;
  auto tokenizer = Tokenizer::Load(dir + "/spm.model", &error);
  if (tokenizer == nullptr) return absl::InvalidArgumentError(error);
  if (tokenizer->vocab_size() > config.vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(dir, ": spm.model has ", tokenizer->vocab_size(),
                                                   " pieces but config vocab_size is ",
                                                   config.vocab_size));
  }
  return Create(config, weights, std::move(tokenizer), options);
}

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const ModelConfig& config,
                                                       const TensorMap& weights,
                                                       std::unique_ptr<Tokenizer> tokenizer,
                                                       const EngineOptions& options) {
  LONGQA_RETURN_IF_ERROR(ValidateModelConfig(config));
  at::Device device(at::kCPU);
  try {
    device = at::Device(options.device);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("bad device '", options.device, "'"));
  }
  if (device.is_cuda() && !at::hasCUDA()) {
    return absl::FailedPreconditionError("device cuda requested but no CUDA device is available");
  }
  // LibTorch starts with one intra-op thread on some machines: set it explicitly.
  const int threads = options.threads > 0
                          ? options.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
  try {
    return std::unique_ptr<Engine>(new Engine(config, weights, std::move(tokenizer), device));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("cannot build the model: ", e.what()));
  }
}

Engine::Engine(const ModelConfig& config, const TensorMap& weights,
               std::unique_ptr<Tokenizer> tokenizer, const at::Device& device)
    : config_(config), tokenizer_(std::move(tokenizer)), device_(device) {
  for (const auto& [name, tensor] : weights) weights_[name] = tensor.to(device_);
  if (config_.architecture == Architecture::kEtc) {
    etc_ = std::make_unique<EtcEncoder>(config_, weights_);
  } else {
    cluster_former_ = std::make_unique<ClusterFormerEncoder>(config_, weights_);
  }
}

absl::StatusOr<PreparedRequest> Engine::Prepare(QaRequest request) const {
  if (request.question.empty()) return absl::InvalidArgumentError("question is empty");
  if (!IsValidUtf8(request.question)) {
    return absl::InvalidArgumentError("question is not valid UTF-8");
  }
  if (!IsValidUtf8(request.text)) return absl::InvalidArgumentError("document is not valid UTF-8");
  if (request.paragraphs.empty()) request.paragraphs = SplitParagraphs(request.text);
  if (request.paragraphs.empty()) {
    return absl::InvalidArgumentError("document is empty (no paragraph with text)");
  }
  PreparedRequest prepared;
  std::vector<Piece> pieces;
  std::string error;
  if (!tokenizer_->Encode(request.question, &pieces, &error)) return absl::InternalError(error);
  if (pieces.empty()) return absl::InvalidArgumentError("question has no tokens");
  prepared.question_truncated = static_cast<int64_t>(pieces.size()) > config_.max_question_tokens;
  if (prepared.question_truncated) pieces.resize(config_.max_question_tokens);
  prepared.question_ids.push_back(config_.special.cls);
  for (const Piece& p : pieces) prepared.question_ids.push_back(p.id);
  prepared.question_ids.push_back(config_.special.sep);
  LONGQA_ASSIGN_OR_RETURN(prepared.document, TokenizeDocument(*tokenizer_, request.text,
                                                              request.paragraphs, config_.special));
  prepared.request = std::move(request);
  return prepared;
}

std::pair<at::Tensor, at::Tensor> Engine::EncodeClusterFormer(
    const std::vector<const PreparedRequest*>& batch, std::vector<int64_t>* context_begin) const {
  std::vector<WindowInput> inputs;
  for (const PreparedRequest* r : batch) inputs.push_back({r->question_ids, r->document.ids});
  const WindowPlan plan =
      PlanWindows(inputs, config_.window_tokens, config_.stride_tokens, config_.special.pad);
  const at::Tensor hbar = cluster_former_->Forward(plan, device_);
  *context_begin = plan.context_begin;
  // Answer type from the mean of each request's window CLS rows (an overlap_merge over them).
  const at::Tensor cls =
      kernels::GatherRows(hbar, at::tensor(plan.cls_rows, at::kLong).to(device_));
  const at::Tensor mean_cls = kernels::OverlapMerge(
      cls, at::tensor(plan.windows_begin, at::kLong).to(device_),
      at::arange(plan.num_windows, at::TensorOptions(at::kLong).device(device_)));
  return {kernels::GatherRows(hbar, at::tensor(plan.context_rows, at::kLong).to(device_)),
          mean_cls};
}

std::pair<at::Tensor, at::Tensor> Engine::EncodeEtc(
    const std::vector<const PreparedRequest*>& batch, std::vector<int64_t>* context_begin) const {
  std::vector<EtcInput> inputs;
  for (const PreparedRequest* r : batch) {
    const std::vector<int32_t> pieces(r->question_ids.begin() + 1, r->question_ids.end() - 1);
    inputs.push_back(MakeEtcInput(config_, pieces, r->document.ids, r->document.token_paragraph,
                                  static_cast<int64_t>(r->document.paragraph_bytes.size())));
  }
  const EtcOutput out = etc_->Forward(inputs, device_);
  *context_begin = out.long_begin;
  // Answer type from the global CLS token (the first global token of each request).
  std::vector<int64_t> cls_rows(out.global_begin.begin(), out.global_begin.end() - 1);
  return {out.long_states,
          kernels::GatherRows(out.global_states, at::tensor(cls_rows, at::kLong).to(device_))};
}

std::vector<RequestLogits> Engine::Forward(const std::vector<const PreparedRequest*>& batch) const {
  std::vector<int64_t> context_begin;
  const auto [context, type_input] =
      etc_ ? EncodeEtc(batch, &context_begin) : EncodeClusterFormer(batch, &context_begin);
  // Heads: span and long-answer scores on every context token, answer type per request.
  const at::Tensor span = at::linear(context, WeightAt(weights_, "qa_outputs.weight"),
                                     WeightAt(weights_, "qa_outputs.bias"));
  const at::Tensor long_score = at::linear(context, WeightAt(weights_, "long_answer.weight"),
                                           WeightAt(weights_, "long_answer.bias"));
  const at::Tensor type = at::linear(type_input, WeightAt(weights_, "answer_type.weight"),
                                     WeightAt(weights_, "answer_type.bias"));

  const at::Tensor span_cpu = span.to(at::kCPU).to(at::kFloat).contiguous();
  const at::Tensor long_cpu = long_score.to(at::kCPU).to(at::kFloat).contiguous();
  const at::Tensor type_cpu = type.to(at::kCPU).to(at::kFloat).contiguous();
  std::vector<RequestLogits> out(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    const int64_t begin = context_begin[i], end = context_begin[i + 1];
    const float* s = span_cpu.data_ptr<float>();
    const float* l = long_cpu.data_ptr<float>();
    for (int64_t j = begin; j < end; ++j) {
      out[i].start.push_back(s[2 * j]);
      out[i].end.push_back(s[2 * j + 1]);
      out[i].long_score.push_back(l[j]);
    }
    for (int64_t t = 0; t < kNumAnswerTypes; ++t) {
      out[i].type_logits[t] = type_cpu.data_ptr<float>()[i * kNumAnswerTypes + t];
    }
  }
  return out;
}

std::vector<absl::StatusOr<QaAnswer>> Engine::Run(const std::vector<const PreparedRequest*>& batch,
                                                  BatchTiming* timing) const {
  std::vector<absl::StatusOr<QaAnswer>> answers;
  if (batch.empty()) return answers;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::vector<RequestLogits> logits;
  try {
    at::InferenceMode guard;
    logits = Forward(batch);
  } catch (const std::exception& e) {
    const absl::Status failed = absl::InternalError(absl::StrCat("model failed: ", e.what()));
    answers.assign(batch.size(), failed);
    return answers;
  }
  const auto inferred = Clock::now();
  for (size_t i = 0; i < batch.size(); ++i) {
    const PreparedRequest& r = *batch[i];
    QaAnswer answer = DecodeAnswer(logits[i], r.document, r.request.text, r.request.options);
    answer.question_truncated = r.question_truncated;
    answer.question_tokens = static_cast<int64_t>(r.question_ids.size()) - 2;
    answer.document_tokens = static_cast<int64_t>(r.document.ids.size());
    answer.windows =
        etc_ ? 1 : NumWindows(answer.document_tokens, config_.window_tokens, config_.stride_tokens);
    answers.push_back(std::move(answer));
  }
  if (timing != nullptr) {
    timing->inference_seconds = std::chrono::duration<double>(inferred - start).count();
    timing->decode_seconds = std::chrono::duration<double>(Clock::now() - inferred).count();
  }
  return answers;
}

absl::StatusOr<QaAnswer> Engine::Answer(QaRequest request) const {
  LONGQA_ASSIGN_OR_RETURN(PreparedRequest prepared, Prepare(std::move(request)));
  return std::move(Run({&prepared})[0]);
}

}  // namespace longqa
