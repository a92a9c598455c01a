#include "server/batcher.h"

#include <algorithm>
#include <limits>

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
  if (item->is_cancelled && item->is_cancelled()) {
    return absl::CancelledError("client cancelled before work started");
  }
  if (queued_tokens_ + item->tokens > options_.max_queue_tokens) {
    return absl::ResourceExhaustedError(absl::StrCat("queue full: ", queued_tokens_,
                                                     " tokens queued, limit ",
                                                     options_.max_queue_tokens, "; retry later"));
  }
  CallerQueue& queue = callers_[item->caller];
  if (queue.tokens + item->tokens > options_.max_caller_queue_tokens) {
    const int64_t mine = queue.tokens;
    if (queue.items.empty()) callers_.erase(item->caller);
    return absl::ResourceExhaustedError(
        absl::StrCat("this caller has ", mine, " tokens queued; one caller may queue at most ",
                     options_.max_caller_queue_tokens, "; wait for answers before sending more"));
  }
  if (queue.items.empty()) turns_.push_back(item->caller);
  item->enqueued = clock_->Now();
  queue.tokens += item->tokens;
  queued_tokens_ += item->tokens;
  ++queued_items_;
  queue.items.push_back(std::move(item));
  metrics_->SetQueue(queued_items_, queued_tokens_);
  work_cv_.notify_one();
  return absl::OkStatus();
}

DrainResult Batcher::Drain(std::chrono::milliseconds timeout, std::chrono::milliseconds grace) {
  DrainResult result;
  std::unique_lock<std::mutex> lock(mu_);
  accepting_ = false;
  work_cv_.notify_all();  // a batch waiting for more requests closes now
  const Clock::Time until = clock_->Now() + timeout;
  while (queued_items_ > 0 || running_ > 0) {
    if (clock_->Now() >= until) break;
    clock_->WaitUntil(lock, idle_cv_, until);
  }
  if (queued_items_ == 0 && running_ == 0) return result;

  // The deadline passed: what is queued is answered now, what runs stops at its next group of
  // windows.
  result.finished = false;
  abandon_ = true;
  std::vector<std::unique_ptr<WorkItem>> left;
  for (auto& [caller, queue] : callers_) {
    for (auto& item : queue.items) left.push_back(std::move(item));
  }
  callers_.clear();
  turns_.clear();
  queued_items_ = queued_tokens_ = 0;
  metrics_->SetQueue(0, 0);
  result.abandoned = static_cast<int64_t>(left.size()) + running_;
  lock.unlock();
  for (auto& item : left) {
    item->done(absl::UnavailableError("server shut down before this request ran; retry"), {});
  }
  lock.lock();
  const Clock::Time grace_until = clock_->Now() + grace;
  while (running_ > 0 && clock_->Now() < grace_until) {
    clock_->WaitUntil(lock, idle_cv_, grace_until);
  }
  return result;
}

void Batcher::SweepNow() {
  std::vector<std::unique_ptr<WorkItem>> dropped;
  const Clock::WallTime now_wall = clock_->WallNow();
  {
    std::lock_guard<std::mutex> lock(mu_);
    SweepLocked(now_wall, &dropped);
    if (dropped.empty()) return;
    running_ += static_cast<int64_t>(dropped.size());  // Drain waits for their answers too
    metrics_->SetQueue(queued_items_, queued_tokens_);
  }
  AnswerDropped(dropped, now_wall, clock_->Now());
  const int64_t n = static_cast<int64_t>(dropped.size());
  dropped.clear();
  std::lock_guard<std::mutex> lock(mu_);
  FinishedLocked(n);
}

void Batcher::AnswerDropped(std::vector<std::unique_ptr<WorkItem>>& dropped,
                            Clock::WallTime now_wall, Clock::Time now) {
  for (auto& item : dropped) {
    WorkTiming timing;
    timing.queue_seconds = std::chrono::duration<double>(now - item->enqueued).count();
    item->done(CallerGone(*item, now_wall, /*ran=*/false), timing);
  }
}

void Batcher::FinishedLocked(int64_t n) {
  running_ -= n;
  if (running_ == 0) work_cv_.notify_all();  // the engine is idle: a filling batch starts now
  // (After the drain deadline the queue is empty for good: this also wakes Drain's grace wait.)
  if (queued_items_ == 0 && running_ == 0) idle_cv_.notify_all();
}

bool Batcher::IsDead(const WorkItem& item, Clock::WallTime now) const {
  return item.deadline <= now || (item.is_cancelled && item.is_cancelled());
}

absl::Status Batcher::CallerGone(const WorkItem& item, Clock::WallTime now, bool ran) {
  // gRPC's deadline timer runs on its own clock: the cancellation it causes may come a few
  // milliseconds before this clock reaches the deadline. That close, the deadline is the reason.
  const bool expired = item.deadline <= now + std::chrono::milliseconds(100);
  metrics_->RecordDropped(expired ? "deadline" : "cancelled");
  if (expired) {
    return absl::DeadlineExceededError(ran ? "deadline passed while the model ran"
                                           : "deadline passed before work started");
  }
  return absl::CancelledError(ran ? "stopped while the model ran: the caller left"
                                  : "client cancelled before work started");
}

void Batcher::UncountLocked(CallerQueue& queue, const WorkItem& item) {
  queue.tokens -= item.tokens;
  queued_tokens_ -= item.tokens;
  --queued_items_;
}

std::unique_ptr<WorkItem> Batcher::PopLocked(CallerQueue& queue) {
  std::unique_ptr<WorkItem> item = std::move(queue.items.front());
  queue.items.pop_front();
  UncountLocked(queue, *item);
  return item;
}

void Batcher::SweepLocked(Clock::WallTime now, std::vector<std::unique_ptr<WorkItem>>* dead) {
  for (auto& [caller, queue] : callers_) {
    std::deque<std::unique_ptr<WorkItem>> live;
    for (auto& item : queue.items) {
      if (IsDead(*item, now)) {
        UncountLocked(queue, *item);
        dead->push_back(std::move(item));
      } else {
        live.push_back(std::move(item));
      }
    }
    queue.items = std::move(live);
  }
  // Callers left without items leave the round-robin (and lose their deficit, as DRR does).
  std::deque<std::string> turns;
  for (const std::string& caller : turns_) {
    if (callers_.at(caller).items.empty()) {
      callers_.erase(caller);
    } else {
      turns.push_back(caller);
    }
  }
  turns_ = std::move(turns);
}

std::vector<std::unique_ptr<WorkItem>> Batcher::TakeBatchLocked(int64_t* batch_tokens) {
  std::vector<std::unique_ptr<WorkItem>> batch;
  *batch_tokens = 0;
  int64_t batch_memory = 0;
  const int64_t memory_limit = options_.max_batch_memory_bytes > 0
                                   ? options_.max_batch_memory_bytes
                                   : std::numeric_limits<int64_t>::max();
  // Rounds: every waiting caller has one turn a round. Once the batch holds something, a round
  // in which nobody could add a request ends it: a request that needs more turns to collect its
  // deficit waits for the next batch instead of joining this one, so a small question from
  // another caller does not run at the pace of a backlog's big document.
  while (!turns_.empty()) {
    bool took = false;
    const size_t round = turns_.size();
    for (size_t turn = 0; turn < round && !turns_.empty(); ++turn) {
      const std::string caller = turns_.front();
      turns_.pop_front();
      CallerQueue& queue = callers_.at(caller);
      queue.deficit += options_.fair_quantum_tokens;
      bool full = false;
      while (!queue.items.empty() && queue.items.front()->tokens <= queue.deficit) {
        const int64_t tokens = queue.items.front()->tokens;
        const int64_t memory = queue.items.front()->memory_bytes;
        if (!batch.empty() && (*batch_tokens + tokens > options_.max_batch_tokens ||
                               batch_memory > memory_limit - memory)) {
          full = true;
          break;
        }
        queue.deficit -= tokens;
        *batch_tokens += tokens;
        batch_memory += memory;
        batch.push_back(PopLocked(queue));
        took = true;
      }
      if (queue.items.empty()) {
        callers_.erase(caller);
      } else if (full) {
        turns_.push_front(caller);  // its turn goes on in the next batch
        return batch;
      } else {
        turns_.push_back(caller);
      }
      if (*batch_tokens >= options_.max_batch_tokens) return batch;
    }
    if (!took && !batch.empty()) break;
  }
  return batch;
}

Clock::Time Batcher::OldestLocked() const {
  Clock::Time oldest = Clock::Time::max();
  for (const auto& [caller, queue] : callers_) {
    if (!queue.items.empty()) oldest = std::min(oldest, queue.items.front()->enqueued);
  }
  return oldest;
}

void Batcher::WorkerLoop() {
  const auto delay = std::chrono::milliseconds(options_.max_batch_delay_ms);
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [this] { return stopping_ || queued_items_ > 0; });
    if (queued_items_ == 0) return;  // stopping with nothing left
    // An idle engine starts at once. While another batch runs, let this one fill until its token
    // budget or its oldest request's delay runs out, whichever comes first.
    const Clock::Time close_at = OldestLocked() + delay;
    while (queued_items_ > 0 && accepting_ && running_ > 0 &&
           queued_tokens_ < options_.max_batch_tokens && clock_->Now() < close_at) {
      clock_->WaitUntil(lock, work_cv_, close_at);
    }
    if (queued_items_ == 0) continue;  // another worker took it

    const Clock::WallTime now_wall = clock_->WallNow();
    std::vector<std::unique_ptr<WorkItem>> dropped;
    SweepLocked(now_wall, &dropped);
    int64_t batch_tokens = 0;
    std::vector<std::unique_ptr<WorkItem>> batch = TakeBatchLocked(&batch_tokens);
    const int64_t taken = static_cast<int64_t>(batch.size() + dropped.size());
    running_ += taken;
    metrics_->SetQueue(queued_items_, queued_tokens_);
    if (queued_items_ > 0) work_cv_.notify_one();  // leftovers for another worker
    lock.unlock();

    const Clock::Time started = clock_->Now();
    AnswerDropped(dropped, now_wall, started);
    if (!batch.empty()) {
      std::vector<const PreparedRequest*> requests;
      for (const auto& item : batch) requests.push_back(&item->prepared);
      metrics_->RecordBatch(static_cast<int64_t>(batch.size()), batch_tokens);
      // The batch stops at its next group of windows once none of its callers waits any more.
      const StopCheck stop = [this, &batch] {
        if (abandon_) return true;
        const Clock::WallTime now = clock_->WallNow();
        return std::all_of(batch.begin(), batch.end(), [&](const std::unique_ptr<WorkItem>& item) {
          return IsDead(*item, now);
        });
      };
      Engine::BatchTiming batch_timing;
      auto answers = run_(requests, &batch_timing, stop);
      if (batch_timing.rechecked > 0) metrics_->RecordInt8Rechecked(batch_timing.rechecked);
      const Clock::WallTime finished_wall = clock_->WallNow();
      for (size_t i = 0; i < batch.size(); ++i) {
        WorkTiming timing;
        timing.queue_seconds = std::chrono::duration<double>(started - batch[i]->enqueued).count();
        timing.inference_seconds = batch_timing.inference_seconds;
        timing.decode_seconds = batch_timing.decode_seconds;
        timing.batch_requests = static_cast<int64_t>(batch.size());
        if (answers[i].status().code() == absl::StatusCode::kCancelled) {
          // A stopped run: say why this caller's request ended.
          answers[i] =
              abandon_ ? absl::UnavailableError("server shut down while this request ran; retry")
                       : CallerGone(*batch[i], finished_wall, /*ran=*/true);
        }
        batch[i]->done(std::move(answers[i]), timing);
      }
    }
    batch.clear();
    dropped.clear();

    lock.lock();
    FinishedLocked(taken);
  }
}

}  // namespace longqa
