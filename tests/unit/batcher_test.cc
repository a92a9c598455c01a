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
// Release().
class FakeEngine {
 public:
  RunBatchFn Fn() {
    return [this](const std::vector<const PreparedRequest*>& batch, Engine::BatchTiming*) {
      std::vector<std::string> questions;
      for (const PreparedRequest* r : batch) questions.push_back(r->request.question);
      {
        std::unique_lock<std::mutex> lock(mu_);
        batches_.push_back(questions);
        cv_.notify_all();
        cv_.wait(lock, [this] { return !held_; });
      }
      std::vector<absl::StatusOr<QaAnswer>> answers;
      for (size_t i = 0; i < batch.size(); ++i) answers.emplace_back(QaAnswer{});
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
};

std::unique_ptr<WorkItem> Item(const std::string& question, int64_t tokens, Outcomes* out) {
  auto item = std::make_unique<WorkItem>();
  item->prepared.request.question = question;
  item->tokens = tokens;
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
  auto cancelled = Item("cancelled", 10, &out);
  cancelled->is_cancelled = [] { return true; };
  ASSERT_TRUE(batcher.Submit(std::move(cancelled)).ok());
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
  std::lock_guard<std::mutex> lock(out.mu);
  EXPECT_EQ(out.status.count("too_many"), 0u);
}

TEST_F(BatcherTest, DrainAnswersEveryAcceptedRequestThenRefuses) {
  Batcher& batcher = Make(Options(1));
  StartBusy(batcher);
  ASSERT_TRUE(batcher.Submit(Item("queued", 10, &out)).ok());
  std::atomic<bool> drained{false};
  std::thread drain([&] { drained = batcher.Drain(milliseconds(1000)); });
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
  std::lock_guard<std::mutex> lock(out.mu);
  EXPECT_EQ(out.status.count(refused), 0u);
}

TEST_F(BatcherTest, DrainReportsATimeoutWhenWorkOutlastsIt) {
  Batcher& batcher = Make(Options(1));
  StartBusy(batcher);
  std::atomic<int> result{-1};
  std::thread drain([&] { result = batcher.Drain(milliseconds(100)) ? 1 : 0; });
  ASSERT_TRUE(Eventually([&] { return clock.waiting() > 0; }));
  EXPECT_EQ(result, -1);  // still waiting: the fake clock has not moved
  clock.Advance(milliseconds(100));
  drain.join();
  EXPECT_EQ(result, 0);
  engine.Release();  // the batch still finishes, and its caller is answered
  ASSERT_TRUE(out.WaitFor(1));
}

}  // namespace
}  // namespace longqa
