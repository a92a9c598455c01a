// The memory budgets' defaults: the usable memory read from a fake /proc and cgroup tree, and the
// budgets derived from it and from the flags.
#include "server/memory_budget.h"

#include <gtest/gtest.h>

#include <limits>

#include "tests/unit/fake_root.h"

namespace longqa {
namespace {

// The machine's 24 GiB in /proc/meminfo, no cgroup limit until a test writes one.
class MachineRoot : public testing_support::FakeRoot {
 public:
  MachineRoot() : FakeRoot("memory") {
    Write("proc/meminfo", "MemTotal:       24576000 kB\nMemFree:        1000 kB\n");
  }
};

constexpr int64_t kMemTotal = int64_t{24576000} * 1024;

TEST(MemoryBudgetTest, UsableMemoryIsMemTotalWithoutACgroupLimit) {
  MachineRoot root;
  EXPECT_EQ(UsableMemoryBytes(root.path()), kMemTotal);
  root.Write("sys/fs/cgroup/memory.max", "max\n");
  EXPECT_EQ(UsableMemoryBytes(root.path()), kMemTotal);
  root.Write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");  // v1: none
  EXPECT_EQ(UsableMemoryBytes(root.path()), kMemTotal);
}

TEST(MemoryBudgetTest, ACgroupLimitBelowTheMachineIsWhatCounts) {
  MachineRoot root;
  root.Write("sys/fs/cgroup/memory.max", "4294967296\n");  // a container's 4 GiB (v2)
  EXPECT_EQ(UsableMemoryBytes(root.path()), int64_t{4} << 30);
  MachineRoot v1;
  v1.Write("sys/fs/cgroup/memory/memory.limit_in_bytes", "2147483648\n");
  EXPECT_EQ(UsableMemoryBytes(v1.path()), int64_t{2} << 30);
}

TEST(MemoryBudgetTest, TheTightestLimitOfThisProcessesCgroupAndItsAncestors) {
  MachineRoot root;
  // A systemd service (MemoryMax=3G): the limit is on its own cgroup, not on the mount's root.
  root.Write("proc/self/cgroup", "0::/system.slice/longqa.service\n");
  root.Write("sys/fs/cgroup/memory.max", "max\n");
  root.Write("sys/fs/cgroup/system.slice/longqa.service/memory.max", "3221225472\n");
  EXPECT_EQ(UsableMemoryBytes(root.path()), int64_t{3} << 30);
  // A tighter limit on the slice above it holds.
  root.Write("sys/fs/cgroup/system.slice/memory.max", "1073741824\n");
  EXPECT_EQ(UsableMemoryBytes(root.path()), int64_t{1} << 30);
  // Inside a container /proc/self/cgroup may name the host's path: the mount is the container's.
  MachineRoot container;
  container.Write("proc/self/cgroup", "0::/kubepods/burstable/pod1/abc\n");
  container.Write("sys/fs/cgroup/memory.max", "2147483648\n");
  EXPECT_EQ(UsableMemoryBytes(container.path()), int64_t{2} << 30);
  // cgroup v1: the memory controller's own path.
  MachineRoot v1;
  v1.Write("proc/self/cgroup", "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n");
  v1.Write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  v1.Write("sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "536870912\n");
  EXPECT_EQ(UsableMemoryBytes(v1.path()), int64_t{512} << 20);
}

TEST(MemoryBudgetTest, BudgetsDefaultToHalfTheUsableMemoryPerWorker) {
  const MemoryBudget derived = ResolveMemoryBudget(0, 0, 2, int64_t{8} << 30);
  EXPECT_EQ(derived.batch_bytes, int64_t{2} << 30);
  EXPECT_EQ(derived.request_bytes, int64_t{2} << 30);
  // Nothing readable (another OS, a locked-down /proc): no limit rather than refusing everything.
  const MemoryBudget unknown = ResolveMemoryBudget(0, 0, 1, 0);
  EXPECT_EQ(unknown.batch_bytes, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(unknown.request_bytes, std::numeric_limits<int64_t>::max());
  const MemoryBudget flags = ResolveMemoryBudget(3000, 1000, 1, int64_t{8} << 30);
  EXPECT_EQ(flags.batch_bytes, int64_t{3000} << 20);
  EXPECT_EQ(flags.request_bytes, int64_t{1000} << 20);
}

}  // namespace
}  // namespace longqa
