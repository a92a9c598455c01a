// CallInfo: what QaService::Process needs to know about one call, whatever transport carried it
// (gRPC's callback context, or an HTTP request: server/http_api.h).
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace longqa {

struct CallInfo {
  // "grpc" or "http": the transport label of the request metrics.
  std::string transport = "grpc";
  // The caller's "authorization" metadata / header value ("Bearer <token>"), or empty.
  std::string authorization;
  // When the caller stops waiting (max(): never).
  std::chrono::system_clock::time_point deadline = std::chrono::system_clock::time_point::max();
  // True once the caller has gone (asked by the batcher before and during the batch).
  std::function<bool()> is_cancelled = [] { return false; };
  // The fair-queuing identity (server/batcher.h): the peer address without its port.
  std::string caller;
};

}  // namespace longqa
