#include "server/batcher.h"

#include "absl/strings/str_cat.h"

namespace longqa {

Batcher::Batcher(RunBatchFn run, const BatcherOptions& options, ServerMetrics* metrics,
                 const Clock* clock)
    : run_(std::move(run)), options_(options), metrics_(metrics), clock_(clock) {
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

Batcher::~Batcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    accepting_ = false;
  }
  work_cv_.notify_all();
  for (auto& w : workers_) w.join();
}

absl::Status Batcher::Submit(std::unique_ptr<WorkItem> item) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!accepting_) return absl::UnavailableError("server is draining; retry on another replica");
  if (queued_tokens_ + item->tokens > options_.max_queue_tokens) {
    return absl::ResourceExhaustedError(absl::StrCat("queue full: ", queued_tokens_,
                                                     " tokens queued, limit ",
                                                     options_.max_queue_tokens, "; retry later"));
  }
  item->enqueued = clock_->Now();
  queued_tokens_ += item->tokens;
  queue_.push_back(std::move(item));
  metrics_->SetQueue(static_cast<int64_t>(queue_.size()), queued_tokens_);
  work_cv_.notify_one();
  return absl::OkStatus();
}

bool Batcher::Drain(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  accepting_ = false;
  work_cv_.notify_all();  // a batch waiting for more requests closes now
  const Clock::Time until = clock_->Now() + timeout;
  while (!queue_.empty() || running_ > 0) {
    if (clock_->Now() >= until) return false;
    clock_->WaitUntil(lock, idle_cv_, until);
  }
  return true;
}

void Batcher::WorkerLoop() {
  const auto delay = std::chrono::milliseconds(options_.max_batch_delay_ms);
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping with nothing left
    // An idle engine starts at once. While another batch runs, let this one fill until its token
    // budget or its oldest request's delay runs out, whichever comes first.
    const Clock::Time close_at = queue_.front()->enqueued + delay;
    while (!queue_.empty() && accepting_ && running_ > 0 &&
           queued_tokens_ < options_.max_batch_tokens && clock_->Now() < close_at) {
      clock_->WaitUntil(lock, work_cv_, close_at);
    }
    if (queue_.empty()) continue;  // another worker took it

    std::vector<std::unique_ptr<WorkItem>> batch, dropped;
    int64_t batch_tokens = 0;
    const Clock::WallTime now_wall = clock_->WallNow();
    while (!queue_.empty() &&
           (batch.empty() || batch_tokens + queue_.front()->tokens <= options_.max_batch_tokens)) {
      std::unique_ptr<WorkItem> item = std::move(queue_.front());
      queue_.pop_front();
      queued_tokens_ -= item->tokens;
      const bool expired = item->deadline <= now_wall;
      const bool cancelled = item->is_cancelled && item->is_cancelled();
      if (expired || cancelled) {
        dropped.push_back(std::move(item));
      } else {
        batch_tokens += item->tokens;
        batch.push_back(std::move(item));
      }
    }
    const int64_t taken = static_cast<int64_t>(batch.size() + dropped.size());
    running_ += taken;
    metrics_->SetQueue(static_cast<int64_t>(queue_.size()), queued_tokens_);
    if (!queue_.empty()) work_cv_.notify_one();  // leftovers for another worker
    lock.unlock();

    const Clock::Time started = clock_->Now();
    for (auto& item : dropped) {
      const bool expired = item->deadline <= now_wall;
      metrics_->RecordDropped(expired ? "deadline" : "cancelled");
      WorkTiming timing;
      timing.queue_seconds = std::chrono::duration<double>(started - item->enqueued).count();
      item->done(expired ? absl::DeadlineExceededError("deadline passed before work started")
                         : absl::CancelledError("client cancelled before work started"),
                 timing);
    }
    if (!batch.empty()) {
      std::vector<const PreparedRequest*> requests;
      for (const auto& item : batch) requests.push_back(&item->prepared);
      metrics_->RecordBatch(static_cast<int64_t>(batch.size()), batch_tokens);
      Engine::BatchTiming batch_timing;
      auto answers = run_(requests, &batch_timing);
      for (size_t i = 0; i < batch.size(); ++i) {
        WorkTiming timing;
        timing.queue_seconds = std::chrono::duration<double>(started - batch[i]->enqueued).count();
        timing.inference_seconds = batch_timing.inference_seconds;
        timing.decode_seconds = batch_timing.decode_seconds;
        timing.batch_requests = static_cast<int64_t>(batch.size());
        batch[i]->done(std::move(answers[i]), timing);
      }
    }
    batch.clear();
    dropped.clear();

    lock.lock();
    running_ -= taken;
    if (running_ == 0) work_cv_.notify_all();  // the engine is idle: a filling batch starts now
    if (queue_.empty() && running_ == 0) idle_cv_.notify_all();
  }
}

}  // namespace longqa
