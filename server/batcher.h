// The token-budget dynamic batcher: a queue bounded by total queued tokens; a batch closes when
// its requests hold max_batch_tokens or max_batch_delay_ms after its oldest request arrived,
// whichever comes first. Requests whose deadline passed or whose client cancelled are dropped
// before compute (and counted). Workers run batches on the engine; every accepted request gets
// exactly one `done` call.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/engine.h"
#include "server/metrics.h"

namespace longqa {

struct BatcherOptions {
  int64_t max_batch_tokens = 16384;
  int64_t max_batch_delay_ms = 5;
  int64_t max_queue_tokens = 1 << 20;
  int workers = 1;
};

// Where one request's time went inside the batcher, in seconds.
struct WorkTiming {
  double queue_seconds = 0;
  double inference_seconds = 0;
  double decode_seconds = 0;
  int64_t batch_requests = 0;
};

struct WorkItem {
  PreparedRequest prepared;
  int64_t tokens = 0;  // the batching cost: question + document tokens
  std::chrono::steady_clock::time_point enqueued;
  std::chrono::system_clock::time_point deadline = std::chrono::system_clock::time_point::max();
  std::function<bool()> is_cancelled;  // optional
  std::function<void(absl::StatusOr<QaAnswer>, const WorkTiming&)> done;
};

class Batcher {
 public:
  Batcher(const Engine& engine, const BatcherOptions& options, ServerMetrics* metrics);
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Queues the item, or refuses it at once: RESOURCE_EXHAUSTED when the queue's token budget is
  // full, UNAVAILABLE while draining. On refusal `done` is not called.
  absl::Status Submit(std::unique_ptr<WorkItem> item);

  // Stops accepting and waits until every accepted item was answered; false on timeout.
  bool Drain(std::chrono::milliseconds timeout);

 private:
  void WorkerLoop();

  const Engine& engine_;
  const BatcherOptions options_;
  ServerMetrics* metrics_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::deque<std::unique_ptr<WorkItem>> queue_;
  int64_t queued_tokens_ = 0;
  int64_t running_ = 0;  // taken from the queue, not yet answered
  bool accepting_ = true;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace longqa
