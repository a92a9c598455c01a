// At most one log line a second from one call site, with a count of the lines held back: a fault
// that hits every request must not flood stderr (or the disk under it).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>

namespace longqa {

class RateLimitedLog {
 public:
  // Writes `line` (plus how many were held back since the last one written) to stderr unless a
  // line was written within the current second.
  void Write(const std::string& line) {
    const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    int64_t last = last_second_.load();
    if (now != last && last_second_.compare_exchange_strong(last, now)) {
      const int64_t held = held_back_.exchange(0);
      std::cerr << line;
      if (held > 0) std::cerr << " (" << held << " similar lines not logged)";
      std::cerr << "\n";
    } else {
      ++held_back_;
    }
  }

 private:
  std::atomic<int64_t> last_second_{-1};
  std::atomic<int64_t> held_back_{0};
};

}  // namespace longqa
