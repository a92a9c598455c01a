// The longqa.v1.QuestionAnswering service on gRPC's callback API: Answer (unary), AnswerStream
// (bidirectional, pipelined: responses carry request_id and may come out of order) and
// GetModelInfo. Validation, auth and tokenization happen on the RPC's thread; inference on the
// batcher's workers. Every request is counted in the metrics, errors too.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <string>

#include "longqa/v1/qa.grpc.pb.h"
#include "model/engine.h"
#include "server/batcher.h"
#include "server/call_info.h"
#include "server/metrics.h"
#include "server/options.h"

namespace longqa {

// Answer is a raw method (bytes in, bytes out) so that the service parses the request itself:
// for bytes that are no AnswerRequest gRPC would answer UNIMPLEMENTED with an empty message.
class QaService final : public v1::QuestionAnswering::WithRawCallbackMethod_Answer<
                            v1::QuestionAnswering::CallbackService> {
 public:
  // auth_token: empty for no token auth. max_request_memory_bytes: a request whose estimated
  // activation memory is over it is refused (server/memory_budget.h).
  QaService(const Engine& engine, Batcher* batcher, ServerMetrics* metrics,
            const ServerOptions& options, std::string auth_token, int64_t max_request_memory_bytes);

  grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* context,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override;
  grpc::ServerBidiReactor<v1::AnswerRequest, v1::AnswerResponse>* AnswerStream(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* GetModelInfo(grpc::CallbackServerContext* context,
                                         const v1::GetModelInfoRequest* request,
                                         v1::ModelInfo* response) override;

  // Where a request ended: refused on arrival (its own content or size), refused by the queue
  // (full), or answered (or failed) by a batch. HTTP tells RESOURCE_EXHAUSTED apart by it: 413,
  // 429, 503.
  enum class Stage { kAdmission, kQueue, kRun };
  // Validates, tokenizes and queues one request of any transport. `done` is called exactly once:
  // at once with an error status, or later from a batcher worker with the filled response.
  using Done = std::function<void(grpc::Status, v1::AnswerResponse, Stage)>;
  void Process(const CallInfo& call, const v1::AnswerRequest& request, const std::string& method,
               Done done);

  // UNAUTHENTICATED unless token auth is off or `authorization` is "Bearer <token>".
  grpc::Status CheckAuth(const std::string& authorization) const;
  grpc::Status CheckAuth(const grpc::CallbackServerContext* context) const;
  // The served model and the server's limits (GetModelInfo, GET /v1/model).
  v1::ModelInfo ModelInfo() const;
  // Gives a request without a caller-chosen id the next "srv-<n>"; returns the id.
  const std::string& EnsureRequestId(v1::AnswerRequest* request) {
    if (request->request_id().empty()) {
      request->set_request_id("srv-" + std::to_string(++request_counter_));
    }
    return request->request_id();
  }
  ServerMetrics* metrics() const { return metrics_; }
  Batcher* batcher() const { return batcher_; }

 private:
  const Engine& engine_;
  Batcher* batcher_;
  ServerMetrics* metrics_;
  const ServerOptions options_;
  const std::string auth_token_;
  const int64_t max_request_memory_bytes_;
  std::atomic<uint64_t> request_counter_{0};
};

// The trailing metadata key that carries a unary Answer call's request id (the caller's, or the
// "srv-<n>" the server assigned).
inline constexpr char kRequestIdMetadata[] = "longqa-request-id";

// Parses a raw Answer request; INVALID_ARGUMENT saying so when the bytes are no AnswerRequest.
grpc::Status ParseRequest(const grpc::ByteBuffer& bytes, v1::AnswerRequest* request);
// "OK", "INVALID_ARGUMENT", ...: the metrics label of a status code.
std::string StatusCodeName(grpc::StatusCode code);
grpc::Status ToGrpcStatus(const absl::Status& status);
// The fair-queuing identity of a gRPC peer: its address without the port.
std::string CallerOf(const std::string& peer);
// A gRPC call as the transport-neutral CallInfo.
CallInfo GrpcCall(grpc::CallbackServerContext* context);

}  // namespace longqa
