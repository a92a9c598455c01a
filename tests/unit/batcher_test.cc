// The batcher alone: a fake engine (a run-batch function that records its batches and can be held
// busy) and a fake clock (time moves only when the test says so). No server, no model, no sleeps.
#include "server/batcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace longqa {
namespace {

using std::chrono::milliseconds;

class FakeClock : public Clock {
 public:
  Time Now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  WallTime WallNow() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return wall_epoch_ + std::chrono::duration_cast<WallTime::duration>(now_ - Time());
  }
  // Waits briefly on the real condition variable, so a waiter re-checks the fake time without
  // any notification lost; `waiting()` tells the test that the batcher chose to wait.
  void WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 Time deadline) const override {
    if (Now() >= deadline) return;
    ++waiting_;
    cv.wait_for(lock, milliseconds(1));
    --waiting_;
  }
  void Advance(milliseconds d) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += d;
  }
  int waiting() const { return waiting_; }

 private:
  mutable std::mutex mu_;
  Time now_ = Time() + std::chrono::hours(1);
  const WallTime wall_epoch_ = WallTime() + std::chrono::hours(24 * 365 * 50);
  mutable std::atomic<int> waiting_{0};
};

// Records each batch as the list of its requests' question texts; Hold() keeps calls busy until
// Release(). While held, a run polls its stop check as the engine does between layers, and ends
// with CANCELLED answers when it says stop.
class FakeEngine {
 public:
  RunBatchFn Fn() {
    return [this](const std::vector<const PreparedRequest*>& batch, Engine::BatchTiming*,
                  const StopCheck& stop) {
      std::vector<std::string> questions;
      for (const PreparedRequest* r : batch) questions.push_back(r->request.question);
      bool stopped = false;
      {
        std::unique_lock<std::mutex> lock(mu_);
        batches_.push_back(questions);
        cv_.notify_all();
        while (held_ && !stopped) {
          cv_.wait_for(lock, milliseconds(1));
          stopped = stop && stop();
        }
      }
      std::vector<absl::StatusOr<QaAnswer>> answers;
      for (size_t i = 0; i < batch.size(); ++i) {
        if (stopped) {
          answers.emplace_back(absl::CancelledError("stopped"));
        } else {
          answers.emplace_back(QaAnswer{});
        }
      }
      return answers;
    };
  }
  void Hold() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = true;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = false;
    cv_.notify_all();
  }
  // Blocks until `n` batches have started (fails the test after 10 s of real time).
  bool WaitForBatches(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return batches_.size() >= n; });
  }
  std::vector<std::vector<std::string>> batches() {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  std::vector<std::vector<std::string>> batches_;
};

// What each item's `done` received.
struct Outcomes {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, absl::Status> status;  // by question

  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return status.size() >= n; });
  }
  absl::Status Of(const std::string& q) {
    std::lock_guard<std::mutex> lock(mu);
    return status.at(q);
  }
  // True once `q` has had its done call.
  bool Answered(const std::string& q) {
    std::lock_guard<std::mutex> lock(mu);
    return status.count(q) > 0;
  }
};

std::unique_ptr<WorkItem> Item(const std::string& question, int64_t tokens, Outcomes* out,
                               const std::string& caller = "", int64_t memory_bytes = 0) {
  auto item = std::make_unique<WorkItem>();
  item->memory_bytes = memory_bytes;
  item->prepared.request.question = question;
  item->tokens = tokens;
  item->caller = caller;
  item->done = [out, question](absl::StatusOr<QaAnswer> answer, const WorkTiming&) {
    std::lock_guard<std::mutex> lock(out->mu);
    out->status[question] = answer.status();
    out->cv.notify_all();
  };
  return item;
}

// Spins (yielding) until `pred` holds; false after 10 s of real time.
template <typename Pred>
bool Eventually(Pred pred) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

BatcherOptions Options(int workers, int64_t max_batch_tokens = 100, int64_t delay_ms = 50,
                       int64_t max_queue_tokens = 1000) {
  BatcherOptions o;
  o.fair_quantum_tokens = 1000;  // FIFO within one caller, whatever the sizes
  o.workers = workers;
  o.max_batch_tokens = max_batch_tokens;
  o.max_batch_delay_ms = delay_ms;
  o.max_queue_tokens = max_queue_tokens;
  return o;
}

// Each test owns a fake clock, a fake engine, the metrics and the outcomes of its requests.
class BatcherTest : public ::testing::Test {
 protected:
  Batcher& Make(const BatcherOptions& options) {
    batcher_ = std::make_unique<Batcher>(engine.Fn(), options, &metrics, &clock);
    return *batcher_;
  }
  // A failed assertion may leave the engine held: release it so the workers can be joined.
  void TearDown() override {
    engine.Release();
    batcher_.reset();
  }
  // Holds the engine and has it run a request called "busy" (tokens 10), so the next requests
  // queue behind a running batch.
  void StartBusy(Batcher& batcher) {
    engine.Hold();
    ASSERT_TRUE(batcher.Submit(Item("busy", 10, &out)).ok());
    ASSERT_TRUE(engine.WaitForBatches(1));
  }

  FakeClock clock;
  FakeEngine engine;
  ServerMetrics metrics;
  Outcomes out;

 private:
  std::unique_ptr<Batcher> batcher_;
};

TEST_F(BatcherTest, ALoneRequestOnAnIdleEngineStartsAtOnce) {
  Batcher& batcher = Make(Options(1, 100, /*delay_ms=*/60000));
  ASSERT_TRUE(batcher.Submit(Item("a", 10, &out)).ok());
  // The clock never moves: the batch must not wait for the (one-minute) delay.
  ASSERT_TRUE(out.WaitFor(1));
  EXPECT_TRUE(out.Of("a").ok());
  EXPECT_EQ(engine.batches(), (std::vector<std::vector<std::string>>{{"a"}}));
}

TEST_F(BatcherTest, RequestsArrivingDuringARunAreBatchedTogether) {
  Batcher& batcher = Make(Options(1));
  StartBusy(batcher);
  for (const char* q : {"b", "c", "d"}) ASSERT_TRUE(batcher.Submit(Item(q, 10, &out)).ok());
  engine.Release();
  ASSERT_TRUE(out.WaitFor(4));
  EXPECT_EQ(engine.batches(), (std::vector<std::vector<std::string>>{{"busy"}, {"b", "c", "d"}}));
}

TEST_F(BatcherTest, WhileBusyABatchClosesAtItsMaxDelay) {
  Batcher& batcher = Make(Options(2, 100, /*delay_ms=*/50));
  StartBusy(batcher);
  ASSERT_TRUE(batcher.Submit(Item("x", 10, &out)).ok());
  // The second worker waits for more requests: nothing runs until the delay has passed.
  ASSERT_TRUE(Eventually([&] { return clock.waiting() > 0; }));
  clock.Advance(milliseconds(49));
  ASSERT_TRUE(batcher.Submit(Item("y", 10, &out)).ok());
  EXPECT_EQ(engine.batches().size(), 1u);
  clock.Advance(milliseconds(1));
  ASSERT_TRUE(engine.WaitForBatches(2));
  EXPECT_EQ(engine.batches()[1], (std::vector<std::string>{"x", "y"}));
  engine.Release();
  ASSERT_TRUE(out.WaitFor(3));
}

TEST_F(BatcherTest, WhileBusyABatchClosesAtItsTokenBudgetWithoutWaiting) {
  Batcher& batcher = Make(Options(2, /*max_batch_tokens=*/100, /*delay_ms=*/60000));
  StartBusy(batcher);
  ASSERT_TRUE(batcher.Submit(Item("p", 40, &out)).ok());
  ASSERT_TRUE(Eventually([&] { return clock.waiting() > 0; }));
  ASSERT_TRUE(batcher.Submit(Item("q", 40, &out)).ok());
  ASSERT_TRUE(batcher.Submit(Item("r", 40, &out)).ok());  // 120 queued: over the budget
  // The batch closes with the clock still: p and q fit in 100 tokens, r waits for the next one.
  ASSERT_TRUE(engine.WaitForBatches(2));
  EXPECT_EQ(engine.batches()[1], (std::vector<std::string>{"p", "q"}));
  engine.Release();
  ASSERT_TRUE(out.WaitFor(4));
  EXPECT_EQ(engine.batches().back(), (std::vector<std::string>{"r"}));
}

TEST_F(BatcherTest, ExpiredAndCancelledRequestsAreDroppedBeforeCompute) {
  Batcher& batcher = Make(Options(1));
  StartBusy(batcher);
  auto expiring = Item("expiring", 10, &out);
  expiring->deadline = clock.WallNow() + milliseconds(5);
  ASSERT_TRUE(batcher.Submit(std::move(expiring)).ok());
  std::atomic<bool> gone{false};
  auto cancelled = Item("cancelled", 10, &out);
  cancelled->is_cancelled = [&] { return gone.load(); };
  ASSERT_TRUE(batcher.Submit(std::move(cancelled)).ok());
  gone = true;  // the caller leaves while its request waits
  auto patient = Item("patient", 10, &out);
  patient->deadline = clock.WallNow() + milliseconds(500);
  ASSERT_TRUE(batcher.Submit(std::move(patient)).ok());
  clock.Advance(milliseconds(10));  // the first deadline passes while it waits in the queue
  engine.Release();
  ASSERT_TRUE(out.WaitFor(4));
  EXPECT_EQ(out.Of("expiring").code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(out.Of("cancelled").code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(out.Of("patient").ok());
  // Only the live request reached the engine.
  EXPECT_EQ(engine.batches(), (std::vector<std::vector<std::string>>{{"busy"}, {"patient"}}));
}

TEST_F(BatcherTest, AFullQueueRefusesWithoutCallingDone) {
  Batcher& batcher = Make(Options(1, 100, 50, /*max_queue_tokens=*/100));
  StartBusy(batcher);  // taken from the queue: its tokens no longer count
  ASSERT_TRUE(batcher.Submit(Item("fits", 60, &out)).ok());
  const absl::Status refused = batcher.Submit(Item("too_many", 50, &out));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("queue full"), std::string::npos) << refused.message();
  ASSERT_TRUE(batcher.Submit(Item("still_fits", 40, &out)).ok());
  engine.Release();
  ASSERT_TRUE(out.WaitFor(3));
  EXPECT_FALSE(out.Answered("too_many"));
}

TEST_F(BatcherTest, DrainAnswersEveryAcceptedRequestThenRefuses) {
  Batcher& batcher = Make(Options(1));
  StartBusy(batcher);
  ASSERT_TRUE(batcher.Submit(Item("queued", 10, &out)).ok());
  std::atomic<bool> drained{false};
  std::thread drain([&] { drained = batcher.Drain(milliseconds(1000)).finished; });
  // Until Drain has begun, a submission is still accepted (and must be answered); after, refused.
  std::vector<std::string> accepted_late;
  std::string refused;
  int attempts = 0;
  ASSERT_TRUE(Eventually([&] {
    const std::string q = "late" + std::to_string(attempts++);
    const absl::Status submitted = batcher.Submit(Item(q, 1, &out));
    if (submitted.code() == absl::StatusCode::kUnavailable) {
      refused = q;
      return true;
    }
    // Accepted, or refused for a full queue when the drain thread is slow to start.
    if (submitted.ok()) accepted_late.push_back(q);
    return false;
  }));
  engine.Release();
  drain.join();
  EXPECT_TRUE(drained);
  EXPECT_TRUE(out.Of("busy").ok());
  EXPECT_TRUE(out.Of("queued").ok());
  for (const std::string& q : accepted_late) EXPECT_TRUE(out.Of(q).ok()) << q;
  EXPECT_FALSE(out.Answered(refused));
}

TEST_F(BatcherTest, DrainReportsATimeoutWhenWorkOutlastsIt) {
  Batcher& batcher = Make(Options(1));
  StartBusy(batcher);
  ASSERT_TRUE(batcher.Submit(Item("queued", 10, &out)).ok());
  std::atomic<bool> returned{false};
  DrainResult result;
  std::thread drain([&] {
    result = batcher.Drain(milliseconds(100), milliseconds(60000));
    returned = true;
  });
  ASSERT_TRUE(Eventually([&] { return clock.waiting() > 0; }));
  EXPECT_FALSE(returned);  // still waiting: the fake clock has not moved
  clock.Advance(milliseconds(100));
  // At the deadline the queued request is answered UNAVAILABLE, and the running batch stops at
  // its next check (the engine is still held) and is answered UNAVAILABLE too.
  drain.join();
  EXPECT_FALSE(result.finished);
  EXPECT_EQ(result.abandoned, 2);
  ASSERT_TRUE(out.WaitFor(2));
  EXPECT_EQ(out.Of("queued").code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(out.Of("busy").code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(engine.batches().size(), 1u);  // the queued request never reached the engine
}

TEST_F(BatcherTest, DrainWithinItsTimeIsFinished) {
  Batcher& batcher = Make(Options(1));
  ASSERT_TRUE(batcher.Submit(Item("a", 10, &out)).ok());
  const DrainResult result = batcher.Drain(milliseconds(1000));
  EXPECT_TRUE(result.finished);
  EXPECT_EQ(result.abandoned, 0);
  EXPECT_TRUE(out.Of("a").ok());
}

TEST_F(BatcherTest, CallersTakeTurnsSoABacklogDoesNotDelayAnotherCaller) {
  BatcherOptions o = Options(1, /*max_batch_tokens=*/100);
  o.fair_quantum_tokens = 40;
  Batcher& batcher = Make(o);
  StartBusy(batcher);
  for (int i = 1; i <= 5; ++i) {
    ASSERT_TRUE(batcher.Submit(Item("a" + std::to_string(i), 40, &out, "ipv4:10.0.0.1")).ok());
  }
  ASSERT_TRUE(batcher.Submit(Item("b1", 40, &out, "ipv4:10.0.0.2")).ok());
  engine.Release();
  ASSERT_TRUE(out.WaitFor(7));
  // First-come-first-served would run a1 a2, then a3 a4, then a5 b1. Round-robin puts b1 in the
  // very next batch, next to the backlog's first request.
  const auto batches = engine.batches();
  ASSERT_GE(batches.size(), 2u);
  EXPECT_EQ(batches[1], (std::vector<std::string>{"a1", "b1"}));
}

TEST_F(BatcherTest, AnOversizedRequestWaitsForItsTurnAndRunsAlone) {
  BatcherOptions o = Options(1, /*max_batch_tokens=*/100, 50, /*max_queue_tokens=*/2000);
  o.fair_quantum_tokens = 50;
  Batcher& batcher = Make(o);
  StartBusy(batcher);
  ASSERT_TRUE(batcher.Submit(Item("big", 300, &out, "big")).ok());
  ASSERT_TRUE(batcher.Submit(Item("s1", 30, &out, "small")).ok());
  ASSERT_TRUE(batcher.Submit(Item("s2", 30, &out, "small")).ok());
  engine.Release();
  ASSERT_TRUE(out.WaitFor(4));
  // The big request collects its deficit over turns in which the small caller is served; then
  // it runs alone (it is over the batch budget).
  EXPECT_EQ(engine.batches(),
            (std::vector<std::vector<std::string>>{{"busy"}, {"s1", "s2"}, {"big"}}));
}

TEST_F(BatcherTest, ACallerOverItsShareIsRefusedOthersAreNot) {
  BatcherOptions o = Options(1, 100, 50, /*max_queue_tokens=*/1000);
  o.max_caller_queue_tokens = 100;
  Batcher& batcher = Make(o);
  StartBusy(batcher);
  ASSERT_TRUE(batcher.Submit(Item("a1", 60, &out, "a")).ok());
  const absl::Status refused = batcher.Submit(Item("a2", 60, &out, "a"));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("one caller may queue at most 100"), std::string::npos)
      << refused.message();
  ASSERT_TRUE(batcher.Submit(Item("b1", 60, &out, "b")).ok());
  engine.Release();
  ASSERT_TRUE(out.WaitFor(3));
  EXPECT_FALSE(out.Answered("a2"));
}

TEST_F(BatcherTest, ARunningBatchStopsOnceNoneOfItsCallersWaits) {
  Batcher& batcher = Make(Options(1));
  engine.Hold();  // every run stays busy until its stop check says stop
  std::atomic<bool> busy_gone{false}, first_gone{false};
  auto busy = Item("busy", 10, &out);
  busy->is_cancelled = [&] { return busy_gone.load(); };
  ASSERT_TRUE(batcher.Submit(std::move(busy)).ok());
  ASSERT_TRUE(engine.WaitForBatches(1));
  auto first = Item("first", 10, &out);
  first->is_cancelled = [&] { return first_gone.load(); };
  auto second = Item("second", 10, &out);
  second->deadline = clock.WallNow() + milliseconds(500);
  ASSERT_TRUE(batcher.Submit(std::move(first)).ok());
  ASSERT_TRUE(batcher.Submit(std::move(second)).ok());
  busy_gone = true;  // the only caller of batch 1 leaves: it stops, batch 2 starts
  ASSERT_TRUE(engine.WaitForBatches(2));
  EXPECT_EQ(out.Of("busy").code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(engine.batches()[1], (std::vector<std::string>{"first", "second"}));
  // One caller of two leaves: the batch goes on for the other.
  first_gone = true;
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(out.Answered("first"));
  // The other's deadline passes: nobody waits any more, the batch stops.
  clock.Advance(milliseconds(600));
  ASSERT_TRUE(out.WaitFor(3));
  EXPECT_EQ(out.Of("first").code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(out.Of("second").code(), absl::StatusCode::kDeadlineExceeded);
}

TEST_F(BatcherTest, SweepNowAnswersAQueuedRequestWhoseCallerLeftWithoutWaitingForABatch) {
  BatcherOptions o = Options(1, 100, 50, /*max_queue_tokens=*/1000);
  o.max_caller_queue_tokens = 100;
  Batcher& batcher = Make(o);
  StartBusy(batcher);  // held: no batch forms until the end of the test
  std::atomic<bool> gone{false};
  auto leaver = Item("leaver", 60, &out, "a");
  leaver->is_cancelled = [&] { return gone.load(); };
  ASSERT_TRUE(batcher.Submit(std::move(leaver)).ok());
  auto expiring = Item("expiring", 20, &out, "b");
  expiring->deadline = clock.WallNow() + milliseconds(5);
  ASSERT_TRUE(batcher.Submit(std::move(expiring)).ok());
  ASSERT_TRUE(batcher.Submit(Item("stayer", 10, &out, "b")).ok());
  // Caller a's share is taken by the request it is about to abandon.
  EXPECT_EQ(batcher.Submit(Item("refused", 60, &out, "a")).code(),
            absl::StatusCode::kResourceExhausted);
  gone = true;
  clock.Advance(milliseconds(10));
  batcher.SweepNow();
  // Answered on this thread, while the engine is still busy with the first batch.
  EXPECT_EQ(out.Of("leaver").code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(out.Of("expiring").code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(out.Answered("stayer"));
  EXPECT_EQ(engine.batches().size(), 1u);
  // Its tokens no longer count: the same caller may queue again.
  ASSERT_TRUE(batcher.Submit(Item("a_again", 60, &out, "a")).ok());
  // A request whose caller left before it was queued is refused (no `done` call).
  auto late = Item("late", 10, &out, "c");
  late->is_cancelled = [] { return true; };
  EXPECT_EQ(batcher.Submit(std::move(late)).code(), absl::StatusCode::kCancelled);
  engine.Release();
  ASSERT_TRUE(out.WaitFor(5));
  EXPECT_TRUE(out.Of("stayer").ok());
  EXPECT_TRUE(out.Of("a_again").ok());
  EXPECT_FALSE(out.Answered("late"));
  EXPECT_FALSE(out.Answered("refused"));
}

TEST_F(BatcherTest, ABatchClosesAtItsMemoryBudgetAndTheRestWaits) {
  BatcherOptions o = Options(1, /*max_batch_tokens=*/1000, 50, /*max_queue_tokens=*/2000);
  o.max_batch_memory_bytes = 100;
  Batcher& batcher = Make(o);
  StartBusy(batcher);
  ASSERT_TRUE(batcher.Submit(Item("m60", 10, &out, "", 60)).ok());
  ASSERT_TRUE(batcher.Submit(Item("m40", 10, &out, "", 40)).ok());
  ASSERT_TRUE(batcher.Submit(Item("m30", 10, &out, "", 30)).ok());
  ASSERT_TRUE(batcher.Submit(Item("m500", 10, &out, "", 500)).ok());  // over it alone: runs alone
  engine.Release();
  ASSERT_TRUE(out.WaitFor(5));
  // Tokens would fit all four in one batch; memory takes 60 + 40, then 30, then 500 alone.
  EXPECT_EQ(engine.batches(),
            (std::vector<std::vector<std::string>>{{"busy"}, {"m60", "m40"}, {"m30"}, {"m500"}}));
}

TEST_F(BatcherTest, ASmallQuestionDoesNotShareABatchWithABacklogsBigDocument) {
  BatcherOptions o = Options(1, /*max_batch_tokens=*/1000, 50, /*max_queue_tokens=*/2000);
  o.fair_quantum_tokens = 50;
  Batcher& batcher = Make(o);
  StartBusy(batcher);
  ASSERT_TRUE(batcher.Submit(Item("big", 300, &out, "backlog")).ok());
  ASSERT_TRUE(batcher.Submit(Item("small", 30, &out, "other")).ok());
  engine.Release();
  ASSERT_TRUE(out.WaitFor(3));
  // Both fit the batch's token budget, but the big one needs six turns of deficit: the small
  // question runs on its own instead of at the big document's pace.
  EXPECT_EQ(engine.batches(),
            (std::vector<std::vector<std::string>>{{"busy"}, {"small"}, {"big"}}));
}

TEST_F(BatcherTest, OneCallersManySmallRequestsStillFillABatch) {
  BatcherOptions o = Options(1, /*max_batch_tokens=*/100, 50, /*max_queue_tokens=*/2000);
  o.fair_quantum_tokens = 20;
  Batcher& batcher = Make(o);
  StartBusy(batcher);
  for (const char* q : {"q1", "q2", "q3", "q4", "q5"}) {
    ASSERT_TRUE(batcher.Submit(Item(q, 20, &out, "one")).ok());
  }
  engine.Release();
  ASSERT_TRUE(out.WaitFor(6));
  // One request a round, round after round, up to the batch's 100 tokens.
  EXPECT_EQ(engine.batches()[1], (std::vector<std::string>{"q1", "q2", "q3", "q4", "q5"}));
}

}  // namespace
}  // namespace longqa
