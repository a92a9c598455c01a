// The allocator figures and the periodic release (server/allocator.h), in a binary linked with
// tcmalloc as longqa-server is: freed memory shows up as the allocator's free bytes, and a
// release hands it back to the kernel, at most once per interval.
#include "server/allocator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace longqa {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

TEST(AllocatorTest, FreedMemoryIsCountedAsFreeUntilReleased) {
  const auto before = ReadAllocatorStats();
  ASSERT_TRUE(before.has_value()) << "the test binary is not running on tcmalloc";
  // 64 blocks of 2 MiB, touched, then freed: tcmalloc keeps the spans in its page heap.
  std::vector<void*> blocks;
  for (int i = 0; i < 64; ++i) {
    blocks.push_back(std::malloc(2 * kMiB));
    std::memset(blocks.back(), 1, 2 * kMiB);
  }
  const auto held = ReadAllocatorStats();
  EXPECT_GE(held->allocated_bytes - before->allocated_bytes, 128 * kMiB);
  for (void* block : blocks) std::free(block);
  const auto freed = ReadAllocatorStats();
  EXPECT_LE(freed->allocated_bytes, before->allocated_bytes + 4 * kMiB);
  EXPECT_GE(freed->free_bytes, 100 * kMiB);

  FreeMemoryReleaser releaser(std::chrono::hours(1));
  EXPECT_TRUE(releaser.MaybeRelease());  // the first call releases
  EXPECT_LE(ReadAllocatorStats()->free_bytes, freed->free_bytes - 100 * kMiB);
  EXPECT_FALSE(releaser.MaybeRelease());  // within the interval: nothing
}

}  // namespace
}  // namespace longqa
