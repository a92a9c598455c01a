#include "server/metrics_endpoint.h"

#include <httplib.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <chrono>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace longqa {

absl::StatusOr<std::pair<std::string, int>> SplitHostPort(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("address '", address, "' lacks ':port'"));
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  int port = 0;
  if (!absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("address '", address, "' has a bad port"));
  }
  if (host.empty()) host = "0.0.0.0";
  return std::make_pair(host, port);
}

MetricsEndpoint::MetricsEndpoint(std::shared_ptr<prometheus::Registry> registry,
                                 std::function<void()> before_scrape)
    : registry_(std::move(registry)), before_scrape_(std::move(before_scrape)) {}

MetricsEndpoint::~MetricsEndpoint() { Stop(); }

absl::Status MetricsEndpoint::Start(const std::string& address) {
  if (auto host_port = SplitHostPort(address); !host_port.ok()) return host_port.status();
  http_ = std::make_unique<httplib::Server>();
  // A connection holds a worker while it is open: with httplib's defaults (8 workers here, 5 s
  // read and keep-alive timeouts) about 20 idle connections kept a scrape waiting 9.5 s. More
  // workers and short timeouts bound what idle or slow clients can hold up.
  http_->new_task_queue = [] { return new httplib::ThreadPool(kMetricsWorkers); };
  http_->set_read_timeout(kMetricsIdleTimeoutSeconds);
  http_->set_write_timeout(kMetricsIdleTimeoutSeconds);
  http_->set_keep_alive_timeout(kMetricsIdleTimeoutSeconds);
  http_->Get("/metrics", [registry = registry_, before = before_scrape_](const httplib::Request&,
                                                                         httplib::Response& res) {
    if (before) before();
    const prometheus::TextSerializer serializer;
    res.set_content(serializer.Serialize(registry->Collect()),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  http_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("longqa metrics: GET /metrics\n", "text/plain");
  });
  auto bound = ServeInBackground(*http_, address, "metrics endpoint", &thread_);
  if (!bound.ok()) {
    http_.reset();
    return bound.status();
  }
  port_ = *bound;
  return absl::OkStatus();
}

absl::StatusOr<int> ServeInBackground(httplib::Server& http, const std::string& address,
                                      const std::string& what, std::thread* thread) {
  auto host_port = SplitHostPort(address);
  if (!host_port.ok()) return host_port.status();
  const auto& [host, port] = *host_port;
  const int bound =
      port == 0 ? http.bind_to_any_port(host) : (http.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) return absl::UnavailableError(absl::StrCat(what, " cannot bind ", address));
  *thread = std::thread([&http] { http.listen_after_bind(); });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!http.is_running() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return bound;
}

void MetricsEndpoint::Stop() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
  http_.reset();
}

}  // namespace longqa
