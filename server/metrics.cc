#include "server/metrics.h"

#include <unistd.h>

#include <fstream>

#include "server/allocator.h"

namespace longqa {
namespace {

// The label values pre-initialised at 0. The codes are those the service returns (README,
// "Configuration"); any other is still counted when it happens.
const char* const kRpcMethods[] = {"Answer", "AnswerStream", "GetModelInfo"};
const char* const kStatusCodes[] = {
    "OK",        "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED",
    "CANCELLED", "UNAVAILABLE",      "UNAUTHENTICATED",    "INTERNAL",
    "UNKNOWN"};
const char* const kAnswerTypes[] = {"no_answer", "yes", "no", "short", "long_only"};
const char* const kDropReasons[] = {"deadline", "cancelled"};

using prometheus::Histogram;

Histogram::BucketBoundaries LatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

Histogram::BucketBoundaries PowersOfTwo(double from, int count) {
  Histogram::BucketBoundaries b;
  for (int i = 0; i < count; ++i, from *= 2) b.push_back(from);
  return b;
}

Histogram* MakeHistogram(prometheus::Registry& registry, const std::string& name,
                         const std::string& help, const Histogram::BucketBoundaries& buckets) {
  return &prometheus::BuildHistogram().Name(name).Help(help).Register(registry).Add({}, buckets);
}

prometheus::Family<prometheus::Counter>* CounterFamily(prometheus::Registry& registry,
                                                       const std::string& name,
                                                       const std::string& help) {
  return &prometheus::BuildCounter().Name(name).Help(help).Register(registry);
}

prometheus::Counter* MakeCounter(prometheus::Registry& registry, const std::string& name,
                                 const std::string& help) {
  return &CounterFamily(registry, name, help)->Add({});
}

prometheus::Family<prometheus::Gauge>* GaugeFamily(prometheus::Registry& registry,
                                                   const std::string& name,
                                                   const std::string& help) {
  return &prometheus::BuildGauge().Name(name).Help(help).Register(registry);
}

prometheus::Gauge* MakeGauge(prometheus::Registry& registry, const std::string& name,
                             const std::string& help) {
  return &GaugeFamily(registry, name, help)->Add({});
}

}  // namespace

ServerMetrics::ServerMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  requests_ = CounterFamily(r, "longqa_requests_total",
                            "Requests finished, by method, status code and transport (grpc, http)");
  request_seconds_ = &prometheus::BuildHistogram()
                          .Name("longqa_request_duration_seconds")
                          .Help("Total server time per request, by method and transport")
                          .Register(r);
  queue_seconds_ = MakeHistogram(r, "longqa_queue_duration_seconds",
                                 "Time a request waited in the batching queue", LatencyBuckets());
  tokenize_seconds_ = MakeHistogram(r, "longqa_tokenize_duration_seconds",
                                    "Time to validate and tokenize a request", LatencyBuckets());
  inference_seconds_ =
      MakeHistogram(r, "longqa_inference_duration_seconds",
                    "Encoder + heads time of the batch a request ran in", LatencyBuckets());
  decode_seconds_ =
      MakeHistogram(r, "longqa_decode_duration_seconds",
                    "Answer decoding time of the batch a request ran in", LatencyBuckets());
  batch_requests_ = MakeHistogram(r, "longqa_batch_size_requests", "Requests per inference batch",
                                  {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128});
  batch_tokens_ =
      MakeHistogram(r, "longqa_batch_tokens", "Tokens per inference batch", PowersOfTwo(64, 14));
  document_tokens_ = MakeHistogram(r, "longqa_document_tokens", "Document tokens per request",
                                   PowersOfTwo(32, 14));
  document_windows_ =
      MakeHistogram(r, "longqa_document_windows", "Cluster-Former windows per request (1 for ETC)",
                    PowersOfTwo(1, 12));
  tokens_processed_ = MakeCounter(r, "longqa_tokens_processed_total",
                                  "Question and document tokens run through the model");
  answers_ = CounterFamily(r, "longqa_answers_total",
                           "Answers by type (no_answer, yes, no, short, long_only)");
  dropped_ = CounterFamily(r, "longqa_dropped_requests_total",
                           "Requests dropped before compute, by reason (deadline, cancelled)");
  int8_rechecked_ = MakeCounter(
      r, "longqa_int8_rechecked_requests_total",
      "int8 answers that were close calls, computed again in fp32 (--int8_recheck_margin)");
  queue_requests_ = MakeGauge(r, "longqa_queue_requests", "Requests waiting in the batching queue");
  queue_tokens_ = MakeGauge(r, "longqa_queue_tokens", "Tokens waiting in the batching queue");
  in_flight_ = MakeGauge(r, "longqa_inflight_requests", "Requests accepted and not yet answered");
  model_info_ = GaugeFamily(r, "longqa_model_info", "The served model (always 1), with its labels");
  resident_memory_ =
      MakeGauge(r, "longqa_process_resident_memory_bytes", "Resident memory of the server process");
  if (ReadAllocatorStats()) {
    allocated_memory_ = MakeGauge(r, "longqa_allocator_allocated_bytes",
                                  "Memory the server holds through malloc (tcmalloc's count)");
    allocator_free_memory_ =
        MakeGauge(r, "longqa_allocator_free_bytes",
                  "Memory freed by the server that tcmalloc keeps mapped for reuse");
  }
  ready_ =
      MakeGauge(r, "longqa_ready",
                "1 while the model is loaded and the server answers, 0 while it loads or drains");
  queue_limit_tokens_ = MakeGauge(r, "longqa_queue_limit_tokens",
                                  "Tokens the batching queue admits (--max_queue_tokens)");
  for (const char* method : kRpcMethods) {
    for (const char* code : kStatusCodes) {
      requests_->Add({{"method", method}, {"code", code}, {"transport", "grpc"}});
    }
    request_seconds_->Add({{"method", method}, {"transport", "grpc"}}, LatencyBuckets());
  }
  // The HTTP API (server/http_api.h) answers two of the methods.
  for (const char* method : {"Answer", "GetModelInfo"}) {
    for (const char* code : kStatusCodes) {
      requests_->Add({{"method", method}, {"code", code}, {"transport", "http"}});
    }
    request_seconds_->Add({{"method", method}, {"transport", "http"}}, LatencyBuckets());
  }
  for (const char* type : kAnswerTypes) answers_->Add({{"type", type}});
  for (const char* reason : kDropReasons) dropped_->Add({{"reason", reason}});
  RefreshProcessGauges();
}

void ServerMetrics::RecordRequest(const std::string& method, const std::string& code,
                                  double seconds, const std::string& transport) {
  requests_->Add({{"method", method}, {"code", code}, {"transport", transport}}).Increment();
  request_seconds_->Add({{"method", method}, {"transport", transport}}, LatencyBuckets())
      .Observe(seconds);
}

void ServerMetrics::RecordPhases(double queue_s, double tokenize_s, double inference_s,
                                 double decode_s) {
  queue_seconds_->Observe(queue_s);
  tokenize_seconds_->Observe(tokenize_s);
  inference_seconds_->Observe(inference_s);
  decode_seconds_->Observe(decode_s);
}

void ServerMetrics::RecordDocument(int64_t tokens, int64_t windows) {
  document_tokens_->Observe(static_cast<double>(tokens));
  document_windows_->Observe(static_cast<double>(windows));
}

void ServerMetrics::RecordAnswerType(const std::string& type) {
  answers_->Add({{"type", type}}).Increment();
}

void ServerMetrics::RecordBatch(int64_t requests, int64_t tokens) {
  batch_requests_->Observe(static_cast<double>(requests));
  batch_tokens_->Observe(static_cast<double>(tokens));
  tokens_processed_->Increment(static_cast<double>(tokens));
}

void ServerMetrics::RecordDropped(const std::string& reason) {
  dropped_->Add({{"reason", reason}}).Increment();
}

void ServerMetrics::RecordInt8Rechecked(int64_t requests) {
  int8_rechecked_->Increment(static_cast<double>(requests));
}

void ServerMetrics::SetQueue(int64_t requests, int64_t tokens) {
  queue_requests_->Set(static_cast<double>(requests));
  queue_tokens_->Set(static_cast<double>(tokens));
}

void ServerMetrics::AddInFlight(int64_t delta) {
  in_flight_->Increment(static_cast<double>(delta));
}

void ServerMetrics::SetModelInfo(const std::string& name, const std::string& architecture,
                                 const std::string& device, const std::string& version) {
  model_info_
      ->Add({{"model", name},
             {"architecture", architecture},
             {"device", device},
             {"version", version}})
      .Set(1);
}

void ServerMetrics::SetReady(bool ready) { ready_->Set(ready ? 1 : 0); }

void ServerMetrics::SetQueueLimit(int64_t max_queue_tokens) {
  queue_limit_tokens_->Set(static_cast<double>(max_queue_tokens));
}

void ServerMetrics::RefreshProcessGauges() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  if (statm >> pages_total >> pages_resident) {
    resident_memory_->Set(static_cast<double>(pages_resident) * sysconf(_SC_PAGESIZE));
  }
  if (!allocated_memory_) return;
  if (const auto stats = ReadAllocatorStats()) {
    allocated_memory_->Set(static_cast<double>(stats->allocated_bytes));
    allocator_free_memory_->Set(static_cast<double>(stats->free_bytes));
  }
}

}  // namespace longqa
