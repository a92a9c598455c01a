// Serves a prometheus-cpp registry as the Prometheus text format at GET /metrics over HTTP.
//
// Why not prometheus-cpp's own Exposer: it runs on civetweb, whose fixed 100 KB thread stacks are
// refused beside LibTorch + OpenBLAS's static TLS (docs/environment.md). cpp-httplib's threads
// use the default stack.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace httplib {
class Server;
}
namespace prometheus {
class Registry;
}

namespace longqa {

// Connections served at once, and how long one may sit idle (or stall a read or write).
inline constexpr int kMetricsWorkers = 64;
inline constexpr int kMetricsIdleTimeoutSeconds = 2;

class MetricsEndpoint {
 public:
  // `before_scrape`, when set, runs before each page is built (to refresh OS-read gauges).
  explicit MetricsEndpoint(std::shared_ptr<prometheus::Registry> registry,
                           std::function<void()> before_scrape = nullptr);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // Binds "host:port" (port 0 picks a free one) and serves in a background thread.
  absl::Status Start(const std::string& address);
  // The bound port, once started.
  int port() const { return port_; }
  void Stop();

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::function<void()> before_scrape_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
};

// Splits "host:port" (IPv6 hosts in brackets) into its parts.
absl::StatusOr<std::pair<std::string, int>> SplitHostPort(const std::string& address);

// Binds `http` to `address` ("host:port"; port 0 picks a free one), runs its listen loop on
// *thread and returns the bound port once the loop runs (httplib's stop() does nothing before:
// a Stop() right after start would leave the thread listening and the join hanging).
// `what` names the server in the error.
absl::StatusOr<int> ServeInBackground(httplib::Server& http, const std::string& address,
                                      const std::string& what, std::thread* thread);

}  // namespace longqa
