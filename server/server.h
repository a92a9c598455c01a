// LongqaServer: the whole serving process minus signal handling. Start() starts the metrics
// endpoint, loads the model, runs a warm-up request, starts the batcher and the gRPC server
// (service, health, reflection, TLS/mTLS); health says SERVING and longqa_ready 1 only after all
// of that. Drain() is the graceful stop.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>

#include "absl/status/statusor.h"
#include "model/engine.h"
#include "server/allocator.h"
#include "server/batcher.h"
#include "server/http_api.h"
#include "server/metrics.h"
#include "server/metrics_endpoint.h"
#include "server/options.h"
#include "server/service.h"

namespace longqa {

class LongqaServer {
 public:
  static absl::StatusOr<std::unique_ptr<LongqaServer>> Start(const ServerOptions& options);
  ~LongqaServer();

  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return metrics_endpoint_ ? metrics_endpoint_->port() : 0; }
  int http_port() const { return http_api_ ? http_api_->port() : 0; }

  // Health NOT_SERVING, new requests UNAVAILABLE, queued and in-flight requests finish (up to the
  // drain timeout; what is left then is answered UNAVAILABLE and counted), then the gRPC server
  // and the metrics endpoint stop.
  DrainResult Drain();

 private:
  LongqaServer() = default;

  // Members are destroyed in reverse order, and shutdown relies on it: the gRPC server goes first
  // (no handler runs any more), then the service, then the batcher (its workers join after
  // answering what was queued), then the metrics endpoint, the metrics and last the engine that
  // the batcher's run function and the service point at.
  ServerOptions options_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<ServerMetrics> metrics_;
  std::unique_ptr<MetricsEndpoint> metrics_endpoint_;
  // Hands tcmalloc's free spans back after batches, every 10 s at most (server/allocator.h).
  FreeMemoryReleaser releaser_{std::chrono::seconds(10)};
  std::unique_ptr<Batcher> batcher_;
  std::unique_ptr<QaService> service_;
  std::unique_ptr<grpc::Server> server_;
  // Declared after the service it calls, so it stops first.
  std::unique_ptr<HttpApi> http_api_;
  std::atomic<bool> ready_{false};  // GET /readyz
  int grpc_port_ = 0;
  bool drained_ = false;
};

}  // namespace longqa
