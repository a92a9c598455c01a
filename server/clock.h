// Time as the batcher sees it, behind an interface so that its behaviour (max delay, deadlines)
// is unit-tested with a fake clock: no sleeps, no processes (tests/unit/batcher_test.cc).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace longqa {

class Clock {
 public:
  using Time = std::chrono::steady_clock::time_point;
  using WallTime = std::chrono::system_clock::time_point;

  virtual ~Clock() = default;
  virtual Time Now() const = 0;
  // Wall time, which request deadlines are stated in.
  virtual WallTime WallNow() const = 0;
  // Blocks on `cv`, whose mutex `lock` holds, until it is notified or `deadline` comes. May
  // return early: callers re-check their condition and Now() in a loop.
  virtual void WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                         Time deadline) const = 0;

  // The process's clock: steady_clock, system_clock and condition_variable::wait_until.
  static const Clock& Real();
};

}  // namespace longqa
