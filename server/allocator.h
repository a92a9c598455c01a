// The memory allocator, when the server runs on gperftools' tcmalloc (the release binary links it:
// CMakeLists.txt, longqa_use_tcmalloc): what it holds, and handing back what it keeps.
// Resident memory alone cannot tell a leak (bytes the program holds grow) from the allocator
// keeping freed pages; these two figures can (docs/reliability.md, "Soak").
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>

namespace longqa {

struct AllocatorStats {
  int64_t allocated_bytes = 0;  // held by the program (malloc'd, not yet freed)
  int64_t free_bytes = 0;       // freed by the program, still mapped by the allocator
};

// The figures, or nothing when the process does not run on tcmalloc (sanitizer builds, tests).
std::optional<AllocatorStats> ReadAllocatorStats();

// tcmalloc keeps freed spans for reuse and returns them to the kernel only slowly; activations of
// every size, request after request, make that cache creep up (+13% resident in a 10-minute
// soak with flat allocated bytes). Calling MaybeRelease after each batch hands the free spans
// back at most once per interval: a few page faults per interval, not per request (what glibc's
// malloc cost, bench/results/allocator_cpu_2core.txt). A no-op without tcmalloc.
class FreeMemoryReleaser {
 public:
  explicit FreeMemoryReleaser(std::chrono::milliseconds interval) : interval_(interval) {}
  // Releases when the interval has passed since the last release; safe from any thread.
  // Returns whether it released.
  bool MaybeRelease();

 private:
  const std::chrono::milliseconds interval_;
  // Steady clock of the last release; kNever before the first. (Not 0: the steady clock counts
  // from boot, so on a machine up for less than one interval a 0 here held back the first release.)
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::min();
  std::atomic<int64_t> last_ns_{kNever};
};

}  // namespace longqa
