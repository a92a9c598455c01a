#include "server/allocator.h"

#include <cstddef>

// tcmalloc's C interface (gperftools/malloc_extension_c.h; the header is not installed with the
// runtime library), declared weak: null in a process without tcmalloc.
extern "C" {
int MallocExtension_GetNumericProperty(const char* property, size_t* value) __attribute__((weak));
void MallocExtension_ReleaseFreeMemory() __attribute__((weak));
}

namespace longqa {
namespace {

std::optional<int64_t> Property(const char* name) {
  size_t value = 0;
  if (MallocExtension_GetNumericProperty == nullptr ||
      MallocExtension_GetNumericProperty(name, &value) == 0) {
    return std::nullopt;
  }
  return static_cast<int64_t>(value);
}

}  // namespace

std::optional<AllocatorStats> ReadAllocatorStats() {
  const auto allocated = Property("generic.current_allocated_bytes");
  if (!allocated) return std::nullopt;
  AllocatorStats stats;
  stats.allocated_bytes = *allocated;
  // Free bytes in the page heap and in the per-size-class caches (central, transfer, threads).
  for (const char* name :
       {"tcmalloc.pageheap_free_bytes", "tcmalloc.central_cache_free_bytes",
        "tcmalloc.transfer_cache_free_bytes", "tcmalloc.thread_cache_free_bytes"}) {
    stats.free_bytes += Property(name).value_or(0);
  }
  return stats;
}

bool FreeMemoryReleaser::MaybeRelease() {
  if (MallocExtension_ReleaseFreeMemory == nullptr) return false;
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t last = last_ns_.load();
  const int64_t interval = std::chrono::nanoseconds(interval_).count();
  // One thread wins the interval; the others go on at once.
  if ((last != kNever && now - last < interval) || !last_ns_.compare_exchange_strong(last, now)) {
    return false;
  }
  MallocExtension_ReleaseFreeMemory();
  return true;
}

}  // namespace longqa
