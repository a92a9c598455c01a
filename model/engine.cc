#include "model/engine.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <cmath>
#include <new>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "base/rate_limited_log.h"
#include "base/status_macros.h"
#include "model/compute_info.h"
#include "model/cpu_quota.h"
#include "model/decode_squad.h"
#include "model/encoders/int8_linear.h"
#include "model/encoders/transformer_layer.h"
#include "model/format/model_folder.h"
#include "model/memory_estimate.h"
#include "model/precision_choice.h"

namespace longqa {

absl::Status ModelFailure(const std::exception& e, size_t batch_size) {
  // LibTorch's CPU allocator reports a failed malloc as a plain c10::Error.
  const bool out_of_memory =
      dynamic_cast<const std::bad_alloc*>(&e) != nullptr ||
      dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr ||
      std::string_view(e.what()).find("can't allocate memory") != std::string_view::npos;
  static RateLimitedLog log;
  log.Write(
      absl::StrCat("longqa: model failed on a batch of ", batch_size, " request(s): ", e.what()));
  if (out_of_memory) {
    return absl::ResourceExhaustedError(
        "out of memory while the model ran on this batch; retry later or send a shorter document");
  }
  std::string first_line = e.what();
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) {
    first_line = c10_error->what_without_backtrace();
  }
  first_line = first_line.substr(0, first_line.find('\n')).substr(0, 200);
  return absl::InternalError(absl::StrCat("model failed: ", first_line));
}

absl::StatusOr<std::unique_ptr<Engine>> Engine::LoadFromDir(const std::string& dir,
                                                            const EngineOptions& options) {
  LONGQA_ASSIGN_OR_RETURN(ModelFolder folder, LoadModelFolder(dir));
  return Create(folder.config, folder.weights, std::move(folder.tokenizer), options,
                folder.int8_calibration_text);
}

absl::StatusOr<at::Device> ParseDevice(const std::string& name) {
  at::Device device(at::kCPU);
  try {
    device = at::Device(name);
  } catch (const std::exception&) {
    return absl::InvalidArgumentError(absl::StrCat("bad device '", name, "'"));
  }
  if (device.is_cuda() && !at::hasCUDA()) {
    return absl::FailedPreconditionError("device cuda requested but no CUDA device is available");
  }
  return device;
}

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const ModelConfig& config,
                                                       const TensorMap& weights,
                                                       std::unique_ptr<Tokenizer> tokenizer,
                                                       const EngineOptions& options,
                                                       const std::string& int8_calibration_text) {
  LONGQA_RETURN_IF_ERROR(ValidateModelConfig(config));
  LONGQA_ASSIGN_OR_RETURN(const at::Device device, ParseDevice(options.device));
  // LibTorch starts with one intra-op thread on some machines: set it explicitly, by default to
  // the CPUs this process may use (its affinity and cgroup quota, not the host's count).
  const int threads = options.threads > 0 ? options.threads : ThisProcessCpuQuota().usable_cpus;
  at::set_num_threads(threads);
  if (options.precision == Precision::kInt8 && !device.is_cpu()) {
    return absl::InvalidArgumentError("precision int8 runs on the CPU only");
  }
  if (options.precision == Precision::kInt8 && !Int8LinearAvailable()) {
    return absl::FailedPreconditionError(
        "precision int8 needs LibTorch's oneDNN quantized engine, which this build lacks");
  }
  const float recheck_margin =
      options.int8_recheck_margin.value_or(static_cast<float>(config.int8_recheck_margin));
  if (!(recheck_margin >= 0.0f) || std::isinf(recheck_margin)) {
    return absl::InvalidArgumentError("int8_recheck_margin must be a finite number >= 0");
  }
  PrecisionChoice choice;
  if (options.precision) {
    choice.precision = *options.precision;
  } else {
    choice = ChoosePrecision(config.default_precision, device.is_cuda(), CpuIsa(),
                             Int8LinearAvailable());
  }
  try {
    std::unique_ptr<Engine> engine(new Engine(config, weights, std::move(tokenizer), device,
                                              choice.precision, int8_calibration_text,
                                              recheck_margin));
    engine->precision_reason_ = choice.reason;
    return engine;
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("cannot build the model: ", e.what()));
  }
}

Engine::Engine(const ModelConfig& config, const TensorMap& weights,
               std::unique_ptr<Tokenizer> tokenizer, const at::Device& device, Precision precision,
               const std::string& int8_calibration_text, float int8_recheck_margin)
    : config_(config), tokenizer_(std::move(tokenizer)), device_(device), precision_(precision) {
  for (const auto& [name, tensor] : weights) weights_[name] = tensor.to(device_);
  Int8Calibration calibration;
  int64_t calibration_tokens = 0;
  if (precision == Precision::kInt8 && !int8_calibration_text.empty()) {
    calibration_tokens = RecordInt8Calibration(int8_calibration_text, &calibration);
  }
  const Int8CalibrationInUse in_use(&calibration);
  model_ = std::make_unique<QaModel>(config_, weights_, precision);
  if (precision == Precision::kInt8 && int8_recheck_margin > 0.0f) {
    // It shares weights_ with the int8 model's biases and norms: only its dense layers add memory.
    reference_model_ = std::make_unique<QaModel>(config_, weights_, Precision::kFp32);
    recheck_margin_ = int8_recheck_margin;
  }
  row_blocks_ = RunsInRowBlocks(device);
  if (precision == Precision::kInt8) {
    const int layers = in_use.found() + in_use.missed();
    int8_calibration_ =
        calibration_tokens == 0
            ? "not calibrated: weights rounded to the nearest step (no calibration text)"
            : absl::StrCat("calibrated on ", calibration_tokens,
                           " tokens of text: ", in_use.found(), " of ", layers, " dense layers");
  }
}

int64_t Engine::RecordInt8Calibration(const std::string& text, Int8Calibration* calibration) {
  // Any question: the calibration wants the layers' inputs on real windows, not an answer.
  QaRequest request;
  request.question = "What is this text about?";
  request.text = text;
  absl::StatusOr<PreparedRequest> prepared =
      Prepare(std::move(request), std::numeric_limits<int64_t>::max());
  if (!prepared.ok()) {
    throw std::invalid_argument(
        absl::StrCat("int8 calibration text: ", prepared.status().message()));
  }
  const QaModel fp32(config_, weights_, Precision::kFp32);
  {
    const Int8CalibrationRecording recording(calibration);
    at::InferenceMode guard;
    fp32.Forward({{&prepared->question_ids, &prepared->document}}, device_, nullptr, nullptr);
  }
  return static_cast<int64_t>(prepared->document.ids.size());
}

absl::StatusOr<PreparedRequest> Engine::Prepare(QaRequest request,
                                                int64_t max_document_tokens) const {
  if (request.question.empty()) return absl::InvalidArgumentError("question is empty");
  if (!IsValidUtf8(request.question)) {
    return absl::InvalidArgumentError("question is not valid UTF-8");
  }
  if (!HasLetterOrNumber(request.question)) {
    return absl::InvalidArgumentError(
        "question has no letter or digit (only whitespace, control characters or symbols)");
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
  LONGQA_ASSIGN_OR_RETURN(
      prepared.document,
      TokenizeDocument(*tokenizer_, request.text, request.paragraphs, config_.special,
                       max_document_tokens, config_.qa_format == QaFormat::kNq));
  prepared.request = std::move(request);
  return prepared;
}

std::vector<RequestLogits> Engine::Forward(const QaModel& model,
                                           const std::vector<const PreparedRequest*>& batch,
                                           const StopCheck& stop) const {
  std::vector<QaModelInput> inputs;
  for (const PreparedRequest* r : batch) inputs.push_back({&r->question_ids, &r->document});
  const QaLogits logits = model.Forward(inputs, device_, nullptr, stop);
  auto host = [](const at::Tensor& t) { return t.to(at::kCPU).to(at::kFloat).contiguous(); };
  const at::Tensor start = host(logits.start), end = host(logits.end);
  const at::Tensor long_score = host(logits.long_score), type = host(logits.type);
  std::vector<RequestLogits> out(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    const int64_t begin = logits.context_begin[i], stop = logits.context_begin[i + 1];
    out[i].start.assign(start.data_ptr<float>() + begin, start.data_ptr<float>() + stop);
    out[i].end.assign(end.data_ptr<float>() + begin, end.data_ptr<float>() + stop);
    out[i].long_score.assign(long_score.data_ptr<float>() + begin,
                             long_score.data_ptr<float>() + stop);
    for (int64_t t = 0; t < kNumAnswerTypes; ++t) {
      out[i].type_logits[t] = type.data_ptr<float>()[i * kNumAnswerTypes + t];
    }
  }
  if (logits.window_start.defined()) {
    // qa_format squad: each window's CLS logit, then its context tokens' (at slots q, q+1, ...).
    const at::Tensor window_start = host(logits.window_start);
    const at::Tensor window_end = host(logits.window_end);
    const int64_t t_len = window_start.size(1);
    for (size_t i = 0; i < batch.size(); ++i) {
      const int64_t q = static_cast<int64_t>(batch[i]->question_ids.size());
      for (int64_t w = logits.windows_begin[i]; w < logits.windows_begin[i + 1]; ++w) {
        WindowLogits window;
        window.context_begin = logits.window_context_begin[w];
        const int64_t count = logits.window_context_end[w] - window.context_begin;
        for (const auto& [source, target] :
             {std::pair{&window_start, &window.start}, std::pair{&window_end, &window.end}}) {
          const float* row = source->data_ptr<float>() + w * t_len;
          target->push_back(row[0]);
          target->insert(target->end(), row + q, row + q + count);
        }
        out[i].windows.push_back(std::move(window));
      }
    }
  }
  return out;
}

std::vector<absl::StatusOr<QaAnswer>> Engine::Run(const std::vector<const PreparedRequest*>& batch,
                                                  BatchTiming* timing,
                                                  const StopCheck& stop) const {
  std::vector<absl::StatusOr<QaAnswer>> answers;
  if (batch.empty()) return answers;
  // A batcher worker is a thread LibTorch has not run on: give its OpenMP team the engine's thread
  // count now, as LibTorch's first parallel loop would, before oneDNN (which reads the thread's
  // own count) computes anything on it.
  at::internal::lazy_init_num_threads();
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::vector<RequestLogits> logits;
  try {
    at::InferenceMode guard;
    logits = Forward(*model_, batch, stop);
  } catch (const BatchStopped&) {
    answers.assign(batch.size(),
                   absl::CancelledError("stopped while the model ran: the caller left"));
    return answers;
  } catch (const std::exception& e) {
    answers.assign(batch.size(), ModelFailure(e, batch.size()));
    return answers;
  }
  const auto inferred = Clock::now();
  for (size_t i = 0; i < batch.size(); ++i) answers.push_back(Decode(*batch[i], logits[i]));
  const auto decoded = Clock::now();
  int64_t rechecked = 0;
  if (reference_model_ != nullptr) Recheck(batch, &answers, stop, &rechecked);
  if (timing != nullptr) {
    // A recheck's forward pass is inference too; its decoding is too small to split out.
    timing->inference_seconds = std::chrono::duration<double>(inferred - start).count() +
                                std::chrono::duration<double>(Clock::now() - decoded).count();
    timing->decode_seconds = std::chrono::duration<double>(decoded - inferred).count();
    timing->rechecked = rechecked;
  }
  return answers;
}

QaAnswer Engine::Decode(const PreparedRequest& r, const RequestLogits& logits) const {
  DecodeOptions options = r.request.options;
  if (!options.null_threshold) {
    options.null_threshold =
        static_cast<float>(NullThresholdFor(config_, static_cast<int64_t>(r.document.ids.size())));
  }
  options.add_long_score = config_.answer_score == "type+long";
  QaAnswer answer = config_.qa_format == QaFormat::kSquad
                        ? DecodeSquadAnswer(logits, r.document, r.request.text, options)
                        : DecodeAnswer(logits, r.document, r.request.text, options);
  answer.question_truncated = r.question_truncated;
  answer.question_tokens = static_cast<int64_t>(r.question_ids.size()) - 2;
  answer.document_tokens = static_cast<int64_t>(r.document.ids.size());
  answer.windows =
      config_.architecture == Architecture::kEtc
          ? 1
          : NumWindows(answer.document_tokens, config_.window_tokens, config_.stride_tokens);
  return answer;
}

void Engine::Recheck(const std::vector<const PreparedRequest*>& batch,
                     std::vector<absl::StatusOr<QaAnswer>>* answers, const StopCheck& stop,
                     int64_t* rechecked) const {
  std::vector<size_t> close;
  for (size_t i = 0; i < batch.size(); ++i) {
    if ((*answers)[i].ok() && (*answers)[i]->decision_margin < recheck_margin_) close.push_back(i);
  }
  if (close.empty()) return;
  std::vector<const PreparedRequest*> again;
  for (size_t i : close) again.push_back(batch[i]);
  std::vector<RequestLogits> logits;
  try {
    at::InferenceMode guard;
    logits = Forward(*reference_model_, again, stop);
  } catch (const BatchStopped&) {
    for (size_t i : close) {
      (*answers)[i] = absl::CancelledError("stopped while the model ran: the caller left");
    }
    return;
  } catch (const std::exception& e) {
    // The int8 answers were computed; a close call without its check must not pass as checked.
    for (size_t i : close) (*answers)[i] = ModelFailure(e, again.size());
    return;
  }
  for (size_t k = 0; k < close.size(); ++k) (*answers)[close[k]] = Decode(*again[k], logits[k]);
  *rechecked = static_cast<int64_t>(close.size());
}

int64_t Engine::ActivationBytes(const PreparedRequest& prepared) const {
  RequestShape shape;
  shape.question_tokens = static_cast<int64_t>(prepared.question_ids.size());
  shape.document_tokens = static_cast<int64_t>(prepared.document.ids.size());
  shape.paragraphs = static_cast<int64_t>(prepared.document.paragraph_bytes.size());
  return EstimateActivationBytes(config_, shape, row_blocks_);
}

absl::StatusOr<QaAnswer> Engine::Answer(QaRequest request) const {
  LONGQA_ASSIGN_OR_RETURN(PreparedRequest prepared, Prepare(std::move(request)));
  return std::move(Run({&prepared})[0]);
}

}  // namespace longqa
