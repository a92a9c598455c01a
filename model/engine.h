// The engine: answers a batch of requests together. Prepare() tokenizes (call it off the
// inference thread); Run() packs the windows of all prepared requests into one encoder pass,
// applies the heads and decodes every request.
//
// Thread-safety: after creation an Engine is immutable. Prepare() and Run() are const and may be
// called from many threads at once (the service's handlers call Prepare; the batcher's --workers
// threads call Run concurrently); weights are only read, and each Run builds its own tensors.
#pragma once

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/decode.h"
#include "model/document.h"
#include "model/encoders/int8_calibration.h"
#include "model/encoders/precision.h"
#include "model/format/config.h"
#include "model/format/weights.h"
#include "model/qa_model.h"
#include "model/tokenizers/tokenizer.h"

namespace longqa {

struct QaRequest {
  std::string question;
  std::string text;                   // the document; offsets in answers index this
  std::vector<ByteRange> paragraphs;  // empty: split `text` at blank lines
  DecodeOptions options;
};

struct PreparedRequest {
  QaRequest request;
  std::vector<int32_t> question_ids;  // CLS + question pieces + SEP
  bool question_truncated = false;
  TokenizedDocument document;
};

struct EngineOptions {
  int threads = 0;             // intra-op threads; 0 = the CPUs this process may use
  std::string device = "cpu";  // "cpu" or "cuda[:N]"
  // kInt8: CPU only (model/encoders/int8_linear.h). Unset ("auto"): the model's default_precision
  // where the device runs it natively, else fp32 (model/precision_choice.h).
  std::optional<Precision> precision = Precision::kFp32;
  // Checked int8: an answer whose decision_margin (model/decode.h) is below this many logits is
  // computed again in fp32 and that answer given, so int8's rounding noise cannot tip a close call.
  // 0: off; unset: the model's config.json int8_recheck_margin. Only where the precision is int8.
  std::optional<float> int8_recheck_margin = std::nullopt;
};

// "cpu" or "cuda[:N]" as a device: INVALID_ARGUMENT for a name LibTorch does not know,
// FAILED_PRECONDITION for CUDA where none is available. Engine::Create and the trainer use it.
absl::StatusOr<at::Device> ParseDevice(const std::string& name);

// A failure inside the model, as the caller's status: RESOURCE_EXHAUSTED for an allocation
// failure, else INTERNAL; one line, no stack trace, no path. The full text goes to stderr, at most
// once a second (a burst of failures must not flood the log).
absl::Status ModelFailure(const std::exception& e, size_t batch_size);

class Engine {
 public:
  // Loads a model folder (model/format/model_folder.h).
  static absl::StatusOr<std::unique_ptr<Engine>> LoadFromDir(const std::string& dir,
                                                             const EngineOptions& options);
  // `int8_calibration_text`: where the precision is int8, text the int8 layers are calibrated on
  // (model/encoders/int8_calibration.h): run in fp32 first, each dense layer's inputs recorded;
  // empty: plain rounding. INVALID_ARGUMENT where the text has no paragraph.
  static absl::StatusOr<std::unique_ptr<Engine>> Create(
      const ModelConfig& config, const TensorMap& weights, std::unique_ptr<Tokenizer> tokenizer,
      const EngineOptions& options, const std::string& int8_calibration_text = "");

  // Validates and tokenizes. INVALID_ARGUMENT for an empty question, invalid UTF-8 or a document
  // without any paragraph. Questions longer than max_question_tokens are truncated (reported).
  // RESOURCE_EXHAUSTED for a document of more than max_document_tokens tokens, found out
  // paragraph by paragraph (tokenizing stops there).
  absl::StatusOr<PreparedRequest> Prepare(
      QaRequest request, int64_t max_document_tokens = std::numeric_limits<int64_t>::max()) const;

  // Where a batch's time went, in seconds.
  struct BatchTiming {
    double inference_seconds = 0;  // encoder + heads
    double decode_seconds = 0;     // answer search and byte spans, all requests
    int64_t rechecked = 0;         // requests computed again in fp32 (int8_recheck_margin)
  };

  // Answers prepared requests as one batch; it never throws. A failure inside the model fails
  // every request of the batch: RESOURCE_EXHAUSTED when memory ran out, INTERNAL otherwise, with a
  // one-line message (the full detail goes to the log, at most once a second). `stop` is asked
  // between layers: when it says yes (nobody waits for the batch), every request gets CANCELLED.
  std::vector<absl::StatusOr<QaAnswer>> Run(const std::vector<const PreparedRequest*>& batch,
                                            BatchTiming* timing = nullptr,
                                            const StopCheck& stop = nullptr) const;

  // The activation memory a prepared request needs while the encoder runs
  // (model/memory_estimate.h).
  int64_t ActivationBytes(const PreparedRequest& prepared) const;

  // Prepare + Run for one request.
  absl::StatusOr<QaAnswer> Answer(QaRequest request) const;

  const ModelConfig& config() const { return config_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const at::Device& device() const { return device_; }
  Precision precision() const { return precision_; }
  // How precision() was chosen when the options left it unset; empty when they named it.
  const std::string& precision_reason() const { return precision_reason_; }
  // Checked int8's margin (EngineOptions::int8_recheck_margin); 0 where off or not int8.
  float int8_recheck_margin() const { return recheck_margin_; }
  // int8: what its layers were calibrated on ("calibrated on N tokens of text: M of L dense
  // layers", M the layers that found statistics), or that they were not; empty otherwise.
  const std::string& int8_calibration() const { return int8_calibration_; }

 private:
  Engine(const ModelConfig& config, const TensorMap& weights, std::unique_ptr<Tokenizer> tokenizer,
         const at::Device& device, Precision precision, const std::string& int8_calibration_text,
         float int8_recheck_margin);
  // Runs the text through the model in fp32 with a recording alive; returns its token count.
  // Throws std::invalid_argument where the text cannot be prepared as a request.
  int64_t RecordInt8Calibration(const std::string& text, Int8Calibration* calibration);
  std::vector<RequestLogits> Forward(const QaModel& model,
                                     const std::vector<const PreparedRequest*>& batch,
                                     const StopCheck& stop) const;
  QaAnswer Decode(const PreparedRequest& r, const RequestLogits& logits) const;
  // Checked int8: answers closer than recheck_margin_ computed again by reference_model_.
  void Recheck(const std::vector<const PreparedRequest*>& batch,
               std::vector<absl::StatusOr<QaAnswer>>* answers, const StopCheck& stop,
               int64_t* rechecked) const;

  ModelConfig config_;
  std::unique_ptr<Tokenizer> tokenizer_;
  at::Device device_;
  TensorMap weights_;  // on device_
  std::unique_ptr<QaModel> model_;
  std::unique_ptr<QaModel> reference_model_;  // fp32, where checked int8 is on
  float recheck_margin_ = 0.0f;
  bool row_blocks_ = false;  // the layers' inference path runs in row blocks (memory estimate)
  Precision precision_;
  std::string precision_reason_;
  std::string int8_calibration_;
};

}  // namespace longqa
