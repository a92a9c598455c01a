#include "server/service.h"

#include <chrono>
#include <deque>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "base/rate_limited_log.h"
#include "base/version.h"
#include "server/convert.h"

namespace longqa {

namespace {

using SteadyClock = std::chrono::steady_clock;

double SecondsSince(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

// A unary call's reactor that tells the batcher when its caller leaves (cancel, deadline), so a
// queued request leaves the queue at once instead of when the next batch forms.
class AnswerReactor final : public grpc::ServerUnaryReactor {
 public:
  explicit AnswerReactor(Batcher* batcher) : batcher_(batcher) {}
  void OnCancel() override { batcher_->SweepNow(); }
  void OnDone() override { delete this; }

 private:
  Batcher* batcher_;
};

}  // namespace

std::string StatusCodeName(grpc::StatusCode code) {
  // gRPC and Abseil number their codes alike and spell them alike ("RESOURCE_EXHAUSTED").
  const std::string name = absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  return name.empty() ? "CODE_" + std::to_string(static_cast<int>(code)) : name;
}

std::string CallerOf(const std::string& peer) {
  // "ipv4:10.0.0.7:53122" and "ipv6:[::1]:53122" lose the port: every connection a client opens
  // is the same caller. Anything else ("unix:/path") is kept whole.
  if (peer.rfind("ipv4:", 0) != 0 && peer.rfind("ipv6:", 0) != 0) return peer;
  const size_t colon = peer.rfind(':');
  if (colon <= 4 || colon + 1 == peer.size()) return peer;
  for (size_t i = colon + 1; i < peer.size(); ++i) {
    if (peer[i] < '0' || peer[i] > '9') return peer;
  }
  return peer.substr(0, colon);
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

QaService::QaService(const Engine& engine, Batcher* batcher, ServerMetrics* metrics,
                     const ServerOptions& options, std::string auth_token,
                     int64_t max_request_memory_bytes)
    : engine_(engine),
      batcher_(batcher),
      metrics_(metrics),
      options_(options),
      auth_token_(std::move(auth_token)),
      max_request_memory_bytes_(max_request_memory_bytes) {}

grpc::Status QaService::CheckAuth(const std::string& authorization) const {
  if (auth_token_.empty()) return grpc::Status::OK;
  const std::string expected = "Bearer " + auth_token_;
  // Constant-time compare: the token never leaks through timing.
  unsigned diff = authorization.size() ^ expected.size();
  for (size_t i = 0; i < authorization.size() && i < expected.size(); ++i) {
    diff |= authorization[i] ^ expected[i];
  }
  if (diff == 0) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "missing or wrong bearer token ('authorization: Bearer <token>')");
}

namespace {

std::string AuthorizationOf(const grpc::CallbackServerContext* context) {
  const auto& metadata = context->client_metadata();
  const auto it = metadata.find("authorization");
  return it == metadata.end() ? "" : std::string(it->second.data(), it->second.size());
}

}  // namespace

grpc::Status QaService::CheckAuth(const grpc::CallbackServerContext* context) const {
  return CheckAuth(AuthorizationOf(context));
}

CallInfo GrpcCall(grpc::CallbackServerContext* context) {
  CallInfo call;
  call.transport = "grpc";
  call.authorization = AuthorizationOf(context);
  call.deadline = context->deadline();
  call.is_cancelled = [context] { return context->IsCancelled(); };
  call.caller = CallerOf(context->peer());
  return call;
}

void QaService::Process(const CallInfo& call, const v1::AnswerRequest& request,
                        const std::string& method, Done done) {
  const auto start = SteadyClock::now();
  const std::string transport = call.transport;
  auto fail = [&](const grpc::Status& status, Stage stage = Stage::kAdmission) {
    metrics_->RecordRequest(method, StatusCodeName(status.error_code()), SecondsSince(start),
                            transport);
    done(status, v1::AnswerResponse(), stage);
  };
  if (grpc::Status auth = CheckAuth(call.authorization); !auth.ok()) return fail(auth);
  if (call.deadline <= std::chrono::system_clock::now()) {
    return fail(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline passed on arrival"));
  }
  auto qa_request = ToQaRequest(request, options_.max_document_bytes);
  if (!qa_request.ok()) return fail(ToGrpcStatus(qa_request.status()));
  // Over --max_document_tokens: refused once the paragraphs tokenized so far pass the limit.
  auto prepared = engine_.Prepare(std::move(*qa_request), options_.max_document_tokens);
  if (!prepared.ok()) return fail(ToGrpcStatus(prepared.status()));
  const double tokenize_seconds = SecondsSince(start);
  const int64_t doc_tokens = static_cast<int64_t>(prepared->document.ids.size());
  if (prepared->question_truncated && options_.reject_long_questions) {
    return fail(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                             "question is longer than " +
                                 std::to_string(engine_.config().max_question_tokens) +
                                 " tokens (the server rejects long questions)"));
  }

  // Admission by cost: what the encoder would hold for this request, against the budget.
  const int64_t memory_bytes = engine_.ActivationBytes(*prepared);
  if (memory_bytes > max_request_memory_bytes_) {
    return fail(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("this document (", doc_tokens, " tokens, ",
                     prepared->document.paragraph_bytes.size(), " paragraphs) needs an estimated ",
                     memory_bytes >> 20, " MiB of activation memory; this server allows ",
                     max_request_memory_bytes_ >> 20,
                     " MiB per request (--max_request_memory_mb): send a shorter document")));
  }

  auto item = std::make_unique<WorkItem>();
  item->memory_bytes = memory_bytes;
  item->tokens = doc_tokens + static_cast<int64_t>(prepared->question_ids.size());
  item->prepared = std::move(*prepared);
  item->deadline = call.deadline;
  item->is_cancelled = call.is_cancelled;
  item->caller = call.caller;
  const std::string request_id = request.request_id();  // set by Answer / AnswerStream
  const bool include_timing = request.options().include_timing();
  item->done = [this, start, tokenize_seconds, request_id, include_timing, method, transport, done,
                raw = item.get()](absl::StatusOr<QaAnswer> answer, const WorkTiming& timing) {
    metrics_->AddInFlight(-1);
    if (!answer.ok()) {
      const grpc::Status status = ToGrpcStatus(answer.status());
      if (status.error_code() == grpc::StatusCode::INTERNAL ||
          status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
        // The server's own faults, under the id the caller got: a report can be matched here.
        static RateLimitedLog log;
        log.Write("longqa: request " + request_id + ": " + StatusCodeName(status.error_code()) +
                  ": " + status.error_message());
      }
      metrics_->RecordRequest(method, StatusCodeName(status.error_code()), SecondsSince(start),
                              transport);
      done(status, v1::AnswerResponse(), Stage::kRun);
      return;
    }
    v1::AnswerResponse response;
    response.set_request_id(request_id);
    const double total = SecondsSince(start);
    FillResponse(*answer, raw->prepared, include_timing, tokenize_seconds, timing, total,
                 &response);
    metrics_->RecordPhases(timing.queue_seconds, tokenize_seconds, timing.inference_seconds,
                           timing.decode_seconds);
    metrics_->RecordDocument(answer->document_tokens, answer->windows);
    metrics_->RecordAnswerType(AnswerTypeLabel(answer->type));
    metrics_->RecordRequest(method, "OK", total, transport);
    done(grpc::Status::OK, std::move(response), Stage::kRun);
  };
  metrics_->AddInFlight(1);
  if (absl::Status submitted = batcher_->Submit(std::move(item)); !submitted.ok()) {
    metrics_->AddInFlight(-1);
    return fail(ToGrpcStatus(submitted), Stage::kQueue);
  }
}

grpc::ServerUnaryReactor* QaService::Answer(grpc::CallbackServerContext* context,
                                            const grpc::ByteBuffer* request_bytes,
                                            grpc::ByteBuffer* response_bytes) {
  grpc::ServerUnaryReactor* reactor = new AnswerReactor(batcher_);
  v1::AnswerRequest request;
  const grpc::Status parsed = ParseRequest(*request_bytes, &request);
  // Every call's id reaches the caller, errors included: the one the log names it by.
  context->AddTrailingMetadata(kRequestIdMetadata, EnsureRequestId(&request));
  if (!parsed.ok()) {
    grpc::Status status = CheckAuth(context);  // strangers learn nothing about the bytes
    if (status.ok()) status = parsed;
    metrics_->RecordRequest("Answer", StatusCodeName(status.error_code()), 0);
    reactor->Finish(status);
    return reactor;
  }
  Process(GrpcCall(context), request, "Answer",
          [reactor, response_bytes](grpc::Status status, v1::AnswerResponse answer, Stage) {
            if (status.ok()) {
              grpc::Slice slice(answer.SerializeAsString());
              *response_bytes = grpc::ByteBuffer(&slice, 1);
            }
            reactor->Finish(status);
          });
  return reactor;
}

grpc::Status ParseRequest(const grpc::ByteBuffer& bytes, v1::AnswerRequest* request) {
  std::vector<grpc::Slice> slices;
  bool ok = bytes.Dump(&slices).ok();
  if (ok && slices.size() == 1) {
    ok = request->ParseFromArray(slices[0].begin(), static_cast<int>(slices[0].size()));
  } else if (ok) {
    std::string joined;
    joined.reserve(bytes.Length());
    for (const grpc::Slice& s : slices) joined.append(s.begin(), s.end());
    ok = request->ParseFromString(joined);
  }
  if (ok) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      "the request's " + std::to_string(bytes.Length()) +
                          " bytes are not a longqa.v1.AnswerRequest protobuf message");
}

namespace {

// One AnswerStream call: reads requests one after another, answers each as soon as it is done,
// writes responses one at a time in completion order, finishes when the client has stopped
// sending and every request was answered. Backpressure: with kMaxStreamOutstanding requests in
// work or answers unwritten (a client that sends and does not read), it stops reading until a
// write completes; HTTP/2 flow control then stops the client. Without it the server kept every
// unread answer in memory.
constexpr int64_t kMaxStreamOutstanding = 64;

class AnswerStreamReactor final
    : public grpc::ServerBidiReactor<v1::AnswerRequest, v1::AnswerResponse> {
 public:
  AnswerStreamReactor(QaService* service, grpc::CallbackServerContext* context)
      : service_(service), context_(context) {
    if (grpc::Status auth = service_->CheckAuth(context_); !auth.ok()) {
      service_->metrics()->RecordRequest("AnswerStream", StatusCodeName(auth.error_code()), 0);
      Finish(auth);
      return;
    }
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      std::unique_lock<std::mutex> lock(mu_);
      reads_done_ = true;
      FinishIfDone(lock);
      return;
    }
    v1::AnswerRequest request = std::move(request_);
    service_->EnsureRequestId(&request);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++pending_;
    }
    const std::string id = request.request_id();
    service_->Process(
        GrpcCall(context_), request, "AnswerStream",
        [this, id](grpc::Status status, v1::AnswerResponse response, QaService::Stage) {
          if (!status.ok()) {
            response.set_request_id(id);
            response.mutable_error()->set_code(status.error_code());
            response.mutable_error()->set_message(status.error_message());
          }
          Enqueue(std::move(response));
        });
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (Outstanding() >= kMaxStreamOutstanding) {
        read_paused_ = true;  // OnWriteDone reads on
        return;
      }
    }
    StartRead(&request_);
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock<std::mutex> lock(mu_);
    writes_.pop_front();
    if (!ok) writes_.clear();  // the client is gone: drop what is left
    // Read on once under the bound; after a failed write too, so that the failed read ends it.
    const bool resume_read = read_paused_ && (!ok || Outstanding() < kMaxStreamOutstanding);
    if (resume_read) read_paused_ = false;
    if (!writes_.empty()) {
      const v1::AnswerResponse* next = &writes_.front();
      lock.unlock();
      StartWrite(next);
      if (resume_read) StartRead(&request_);
      return;
    }
    writing_ = false;
    if (resume_read) {
      lock.unlock();
      StartRead(&request_);
      return;
    }
    FinishIfDone(lock);
  }

  void OnDone() override { delete this; }
  // The client left: its queued requests leave the batcher's queue now.
  void OnCancel() override { service_->batcher()->SweepNow(); }

 private:
  // Reactor operations are started outside the lock; deque elements keep their address while
  // others are appended, so front() stays valid for the write in flight.
  void Enqueue(v1::AnswerResponse response) {
    std::unique_lock<std::mutex> lock(mu_);
    --pending_;
    writes_.push_back(std::move(response));
    if (writing_) return;
    writing_ = true;
    const v1::AnswerResponse* next = &writes_.front();
    lock.unlock();
    StartWrite(next);
  }

  // Requests in work plus answers not yet written. Under mu_.
  int64_t Outstanding() const { return pending_ + static_cast<int64_t>(writes_.size()); }

  void FinishIfDone(std::unique_lock<std::mutex>& lock) {
    if (!reads_done_ || pending_ != 0 || writing_ || finished_) return;
    finished_ = true;
    lock.unlock();
    Finish(grpc::Status::OK);
  }

  QaService* service_;
  grpc::CallbackServerContext* context_;
  v1::AnswerRequest request_;
  std::mutex mu_;
  std::deque<v1::AnswerResponse> writes_;  // front() is being written while writing_
  int64_t pending_ = 0;
  bool reads_done_ = false;
  bool read_paused_ = false;  // kMaxStreamOutstanding reached: no read in flight
  bool writing_ = false;
  bool finished_ = false;
};

}  // namespace

grpc::ServerBidiReactor<v1::AnswerRequest, v1::AnswerResponse>* QaService::AnswerStream(
    grpc::CallbackServerContext* context) {
  return new AnswerStreamReactor(this, context);
}

grpc::ServerUnaryReactor* QaService::GetModelInfo(grpc::CallbackServerContext* context,
                                                  const v1::GetModelInfoRequest*,
                                                  v1::ModelInfo* info) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const auto start = SteadyClock::now();
  grpc::Status status = CheckAuth(context);
  if (status.ok()) *info = ModelInfo();
  metrics_->RecordRequest("GetModelInfo", StatusCodeName(status.error_code()), SecondsSince(start));
  reactor->Finish(status);
  return reactor;
}

v1::ModelInfo QaService::ModelInfo() const {
  v1::ModelInfo info;
  const ModelConfig& c = engine_.config();
  info.set_architecture(ArchitectureName(c.architecture));
  info.set_name(ModelName(options_.model_dir));
  info.set_device(engine_.device().str());
  info.set_hidden_size(static_cast<uint32_t>(c.hidden_size));
  info.set_num_layers(static_cast<uint32_t>(c.num_layers()));
  info.set_layer_plan(c.layers);
  info.set_vocab_size(static_cast<uint32_t>(c.vocab_size));
  if (c.architecture == Architecture::kClusterFormer) {
    info.set_window_tokens(static_cast<uint32_t>(c.window_tokens));
    info.set_stride_tokens(static_cast<uint32_t>(c.stride_tokens));
  }
  info.set_max_document_bytes(static_cast<uint64_t>(options_.max_document_bytes));
  info.set_max_document_tokens(static_cast<uint32_t>(options_.max_document_tokens));
  info.set_max_question_tokens(static_cast<uint32_t>(c.max_question_tokens));
  info.set_max_batch_tokens(static_cast<uint32_t>(options_.max_batch_tokens));
  info.set_server_version(kVersion);
  info.set_default_null_threshold(static_cast<float>(c.null_threshold));
  for (const NullThresholdBand& band : c.null_threshold_bands) {
    v1::NullThresholdBand* b = info.add_null_threshold_bands();
    b->set_min_document_tokens(static_cast<uint32_t>(band.min_document_tokens));
    b->set_null_threshold(static_cast<float>(band.null_threshold));
  }
  info.set_answer_score(c.answer_score);
  info.set_qa_format(QaFormatName(c.qa_format));
  info.set_precision(PrecisionName(engine_.precision()));
  return info;
}

}  // namespace longqa
