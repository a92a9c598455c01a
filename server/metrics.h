// Every Prometheus metric of longqa-server, built once here with its help text. Names follow
// Prometheus conventions (base units, _total for counters, _seconds for durations); every latency
// phase is a histogram.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <memory>
#include <string>

namespace longqa {

class ServerMetrics {
 public:
  // Every labelled series that the dashboard and alerts (deploy/) read exists from the start, at 0:
  // a fresh server shows "0 errors" rather than "no data".
  ServerMetrics();

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // One finished RPC (or stream message) of `method` with its gRPC status code name, carried by
  // `transport` ("grpc" or "http").
  void RecordRequest(const std::string& method, const std::string& code, double seconds,
                     const std::string& transport = "grpc");
  // The phases of one answered request.
  void RecordPhases(double queue_s, double tokenize_s, double inference_s, double decode_s);
  void RecordDocument(int64_t tokens, int64_t windows);
  void RecordAnswerType(const std::string& type);
  void RecordBatch(int64_t requests, int64_t tokens);
  // A request dropped before compute: reason is "deadline" or "cancelled".
  void RecordDropped(const std::string& reason);
  // Requests of a batch whose int8 answers were close calls, computed again in fp32.
  void RecordInt8Rechecked(int64_t requests);
  void SetQueue(int64_t requests, int64_t tokens);
  void AddInFlight(int64_t delta);
  void SetModelInfo(const std::string& name, const std::string& architecture,
                    const std::string& device, const std::string& version);
  // 1 while the server answers (model loaded and warmed up, not draining), else 0.
  void SetReady(bool ready);
  // The queue's token limit, so that alerts can state saturation as a ratio.
  void SetQueueLimit(int64_t max_queue_tokens);
  // Refreshes gauges read from the OS and the allocator (resident memory, allocated and free
  // bytes); called before each scrape.
  void RefreshProcessGauges();

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* requests_;
  prometheus::Family<prometheus::Histogram>* request_seconds_;
  prometheus::Histogram* queue_seconds_;
  prometheus::Histogram* tokenize_seconds_;
  prometheus::Histogram* inference_seconds_;
  prometheus::Histogram* decode_seconds_;
  prometheus::Histogram* batch_requests_;
  prometheus::Histogram* batch_tokens_;
  prometheus::Histogram* document_tokens_;
  prometheus::Histogram* document_windows_;
  prometheus::Counter* tokens_processed_;
  prometheus::Family<prometheus::Counter>* answers_;
  prometheus::Family<prometheus::Counter>* dropped_;
  prometheus::Counter* int8_rechecked_;
  prometheus::Gauge* queue_requests_;
  prometheus::Gauge* queue_tokens_;
  prometheus::Gauge* in_flight_;
  prometheus::Family<prometheus::Gauge>* model_info_;
  prometheus::Gauge* resident_memory_;
  prometheus::Gauge* allocated_memory_ = nullptr;  // null without tcmalloc
  prometheus::Gauge* allocator_free_memory_ = nullptr;
  prometheus::Gauge* ready_;
  prometheus::Gauge* queue_limit_tokens_;
};

}  // namespace longqa
