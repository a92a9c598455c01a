// The token-budget dynamic batcher: a queue bounded by total queued tokens. On an idle engine a
// request starts at once; while a batch runs, the next one fills until its requests hold
// max_batch_tokens or max_batch_delay_ms after its oldest request arrived, whichever comes first
// (requests that arrive during a run are batched anyway, by waiting for it). Requests whose
// deadline passed or whose client cancelled are dropped before compute (and counted). Workers run
// batches on the engine; every accepted request gets exactly one `done` call. The batcher sees the
// engine only as a run-batch function and time only through a Clock, so tests drive it with a fake
// of each (tests/unit/batcher_test.cc).
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
#include "server/clock.h"
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
  Clock::Time enqueued;
  Clock::WallTime deadline = Clock::WallTime::max();
  std::function<bool()> is_cancelled;  // optional
  std::function<void(absl::StatusOr<QaAnswer>, const WorkTiming&)> done;
};

// Answers a batch: one result per request, in order; never throws (Engine::Run).
using RunBatchFn = std::function<std::vector<absl::StatusOr<QaAnswer>>(
    const std::vector<const PreparedRequest*>& batch, Engine::BatchTiming* timing)>;

class Batcher {
 public:
  // `run` is called from the worker threads, up to `options.workers` at once. `metrics` and
  // `clock` must outlive the batcher.
  Batcher(RunBatchFn run, const BatcherOptions& options, ServerMetrics* metrics,
          const Clock* clock = &Clock::Real());
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

  const RunBatchFn run_;
  const BatcherOptions options_;
  ServerMetrics* metrics_;
  const Clock* clock_;
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
