// The HTTP/JSON API beside gRPC (--http_listen): POST /v1/answer takes and returns the proto's
// AnswerRequest / AnswerResponse in protobuf's canonical JSON mapping (protobuf's own converter),
// GET /v1/model the ModelInfo, GET /healthz (the process lives) and GET /readyz (the model is
// loaded and the server not draining); GET / is the browser page (server/web/index.html) and
// GET /v1/sample the model folder's sample document and first sample question, for the page.
// Requests go through the same QaService::Process as gRPC: same validation, limits, batcher, auth
// (the "Authorization: Bearer <token>" header) and metrics (transport="http"). Errors are HTTP
// codes with a JSON body
// {"code": "RESOURCE_EXHAUSTED", "grpc_code": 8, "message": "..."} (docs/http-api.md).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "server/service.h"

namespace httplib {
class Server;
}

namespace longqa {

// Requests answered at once: each holds an HTTP worker while its answer is computed.
inline constexpr int kHttpWorkers = 64;
// How often a worker waiting for an answer looks whether its client closed the connection.
inline constexpr std::chrono::milliseconds kHttpPeerPollInterval{100};
// The header that carries a request's deadline in milliseconds (no header: no deadline).
inline constexpr char kHttpTimeoutHeader[] = "X-Longqa-Timeout-Ms";

// TLS of the HTTP API: the gRPC server's files (--tls_cert, --tls_key, --tls_client_ca); all
// empty: plain HTTP. A client CA makes it mutual TLS.
struct HttpTls {
  std::string cert_file, key_file, client_ca_file;
};

// The HTTP status of a gRPC status code, given where the request ended.
int HttpStatusFor(grpc::StatusCode code, QaService::Stage stage);

class HttpApi {
 public:
  // `ready` answers /readyz. `max_body_bytes` bounds a request body (413 beyond it).
  // `model_dir` holds the sample the page loads (sample.txt, sample_questions.json), if any.
  HttpApi(QaService* service, std::function<bool()> ready, int64_t max_body_bytes,
          std::string model_dir, HttpTls tls = {});
  ~HttpApi();
  HttpApi(const HttpApi&) = delete;
  HttpApi& operator=(const HttpApi&) = delete;

  // Binds "host:port" (port 0 picks a free one) and serves in a background thread.
  absl::Status Start(const std::string& address);
  int port() const { return port_; }
  void Stop();

 private:
  QaService* service_;
  std::function<bool()> ready_;
  int64_t max_body_bytes_;
  std::string model_dir_;
  HttpTls tls_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace longqa
