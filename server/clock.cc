#include "server/clock.h"

namespace longqa {
namespace {

class RealClock : public Clock {
 public:
  Time Now() const override { return std::chrono::steady_clock::now(); }
  WallTime WallNow() const override { return std::chrono::system_clock::now(); }
  void WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 Time deadline) const override {
    cv.wait_until(lock, deadline);
  }
};

}  // namespace

const Clock& Clock::Real() {
  static const RealClock* const clock = new RealClock();
  return *clock;
}

}  // namespace longqa
