// The scheduler between the gRPC handlers and the engine (docs/architecture.md, "Scheduling").
// - A queue per caller, served by deficit round-robin in tokens (network fair queuing): forming a
//   batch, each caller in turn may add up to a quantum of tokens more than it has used, so one
//   caller's backlog delays another caller's small question by about one batch at most (the one
//   running when it arrives): a request that needs more turns of deficit than the forming batch
//   gives does not join it. The whole queue is bounded by tokens, and so is each caller's share.
// - On an idle engine a batch starts at once; while a batch runs, the next one fills until
//   max_batch_tokens or max_batch_delay_ms after its oldest request, whichever comes first.
// - Requests whose deadline passed or whose caller cancelled leave the queue at once when the
//   service says a caller left (SweepNow, from gRPC's OnCancel) and whenever a batch is formed
//   (every queue is swept); a running batch stops at its next group of windows once none of its
//   callers waits any more (StopCheck).
// - Drain: stop accepting, answer what was accepted; at the deadline what is left is answered
//   UNAVAILABLE (the running batch stops at its next group of windows) and counted.
// Every accepted request gets exactly one `done` call. The batcher sees the engine only as a
// run-batch function and time only through a Clock, so tests drive it with a fake of each
// (tests/unit/batcher_test.cc).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
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
  int64_t max_caller_queue_tokens = 1 << 18;  // one caller's share of the queue
  int64_t fair_quantum_tokens = 4096;         // deficit round-robin: tokens a caller gains a turn
  // A batch takes requests while their estimated activation memory stays within this (the first
  // request of a batch always runs: the service refuses what could never fit); 0 = no limit.
  int64_t max_batch_memory_bytes = 0;
  int workers = 1;
};

// What Drain did.
struct DrainResult {
  bool finished = true;   // every accepted request was answered before the deadline
  int64_t abandoned = 0;  // accepted requests answered UNAVAILABLE at the deadline
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
  std::string caller;        // fair-queuing identity (the peer's address); "" is a caller too
  int64_t tokens = 0;        // the batching cost: question + document tokens
  int64_t memory_bytes = 0;  // estimated activation memory (Engine::ActivationBytes)
  Clock::Time enqueued;
  Clock::WallTime deadline = Clock::WallTime::max();
  std::function<bool()> is_cancelled;  // optional
  std::function<void(absl::StatusOr<QaAnswer>, const WorkTiming&)> done;
};

// Answers a batch: one result per request, in order; never throws (Engine::Run). `stop` says when
// nobody waits for the batch any more: the run may then end early with CANCELLED answers.
using RunBatchFn = std::function<std::vector<absl::StatusOr<QaAnswer>>(
    const std::vector<const PreparedRequest*>& batch, Engine::BatchTiming* timing,
    const StopCheck& stop)>;

class Batcher {
 public:
  // `run` is called from the worker threads, up to `options.workers` at once. `metrics` and
  // `clock` must outlive the batcher.
  Batcher(RunBatchFn run, const BatcherOptions& options, ServerMetrics* metrics,
          const Clock* clock = &Clock::Real());
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Queues the item, or refuses it at once: RESOURCE_EXHAUSTED when the queue's token budget or
  // the caller's share of it is full, UNAVAILABLE while draining, CANCELLED when its caller has
  // already left. On refusal `done` is not called.
  absl::Status Submit(std::unique_ptr<WorkItem> item);

  // A caller left (cancelled, or its deadline passed): every queued item whose caller is gone
  // leaves the queue now and gets its `done` call (CANCELLED / DEADLINE_EXCEEDED) on this thread,
  // so its tokens stop counting against the queue's and its caller's budgets.
  void SweepNow();

  // Stops accepting and waits until every accepted item was answered. At the timeout, queued
  // items are answered UNAVAILABLE at once and running batches stop at their next group of windows
  // (their items answered UNAVAILABLE too); it then waits for those answers (up to `grace` more).
  DrainResult Drain(std::chrono::milliseconds timeout,
                    std::chrono::milliseconds grace = std::chrono::milliseconds(1000));

 private:
  struct CallerQueue {
    std::deque<std::unique_ptr<WorkItem>> items;
    int64_t tokens = 0;
    int64_t deficit = 0;
  };

  void WorkerLoop();
  // Without mu_: answers items that left the queue because their caller is gone.
  void AnswerDropped(std::vector<std::unique_ptr<WorkItem>>& dropped, Clock::WallTime now_wall,
                     Clock::Time now);
  // With mu_ held: `n` items taken out by a worker or a sweep have had their `done` calls.
  void FinishedLocked(int64_t n);
  // With mu_ held: moves every expired or cancelled item out of the queues into `dead`.
  void SweepLocked(Clock::WallTime now, std::vector<std::unique_ptr<WorkItem>>* dead);
  // With mu_ held: takes the next batch by deficit round-robin over the callers.
  std::vector<std::unique_ptr<WorkItem>> TakeBatchLocked(int64_t* batch_tokens);
  // With mu_ held: takes the item's tokens out of its caller's and the queue's counts.
  void UncountLocked(CallerQueue& queue, const WorkItem& item);
  std::unique_ptr<WorkItem> PopLocked(CallerQueue& queue);
  // The answer of a request that ended because its caller left (deadline or cancel), counted in
  // the dropped-requests metric by reason; `ran`: it had reached the engine.
  absl::Status CallerGone(const WorkItem& item, Clock::WallTime now, bool ran);
  Clock::Time OldestLocked() const;
  bool IsDead(const WorkItem& item, Clock::WallTime now) const;

  const RunBatchFn run_;
  const BatcherOptions options_;
  ServerMetrics* metrics_;
  const Clock* clock_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::map<std::string, CallerQueue> callers_;  // callers with queued items only
  std::deque<std::string> turns_;               // round-robin order of callers_ (front: next)
  int64_t queued_items_ = 0;
  int64_t queued_tokens_ = 0;
  int64_t running_ = 0;  // taken from the queue, not yet answered
  bool accepting_ = true;
  bool stopping_ = false;
  std::atomic<bool> abandon_{false};  // drain deadline passed: running batches stop
  std::vector<std::thread> workers_;
};

}  // namespace longqa
