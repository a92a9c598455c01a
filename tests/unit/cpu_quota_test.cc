// The default thread count: the CPUs this process may use, read from a fake /proc and cgroup tree
// (v2 cpu.max, v1 cfs quota, the tightest of this process's own cgroup, its ancestors and the
// mount's root), and shared out among the server's workers.
#include "model/cpu_quota.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "model/cgroup_folders.h"
#include "tests/unit/fake_root.h"

namespace longqa {
namespace {

namespace fs = std::filesystem;

TEST(CpuQuotaTest, TheAffinityMaskWithoutAQuota) {
  testing_support::FakeRoot root("cpus");
  CpuQuota q = ReadCpuQuota(8, root.path());  // no cgroup files at all
  EXPECT_EQ(q.usable_cpus, 8);
  EXPECT_EQ(q.quota_cpus, 0);
  EXPECT_EQ(DescribeCpuQuota(q), "8 CPUs");
  root.Write("proc/self/cgroup", "0::/\n");
  root.Write("sys/fs/cgroup/cpu.max", "max 100000\n");
  EXPECT_EQ(ReadCpuQuota(8, root.path()).usable_cpus, 8);
  root.Write("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n");  // v1's "no limit"
  root.Write("sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(ReadCpuQuota(8, root.path()).usable_cpus, 8);
  EXPECT_EQ(ReadCpuQuota(0, root.path()).usable_cpus, 1);  // an unreadable mask counts one
}

TEST(CpuQuotaTest, ACgroupV2QuotaRoundedDownAndNeverAboveTheMask) {
  testing_support::FakeRoot root("cpus");
  root.Write("proc/self/cgroup", "0::/\n");
  root.Write("sys/fs/cgroup/cpu.max", "200000 100000\n");  // Kubernetes' limits.cpu: "2"
  CpuQuota q = ReadCpuQuota(64, root.path());
  EXPECT_EQ(q.usable_cpus, 2);
  EXPECT_DOUBLE_EQ(q.quota_cpus, 2.0);
  EXPECT_EQ(DescribeCpuQuota(q), "2 CPUs (cgroup quota 2 of 64)");
  root.Write("sys/fs/cgroup/cpu.max", "250000 100000\n");
  EXPECT_EQ(ReadCpuQuota(64, root.path()).usable_cpus, 2);  // 2.5 CPUs: two threads, not three
  root.Write("sys/fs/cgroup/cpu.max", "50000 100000\n");
  q = ReadCpuQuota(64, root.path());
  EXPECT_EQ(q.usable_cpus, 1);  // half a CPU: still one thread
  EXPECT_EQ(DescribeCpuQuota(q), "1 CPU (cgroup quota 0.5 of 64)");
  root.Write("sys/fs/cgroup/cpu.max", "800000 100000\n");
  EXPECT_EQ(ReadCpuQuota(4, root.path()).usable_cpus, 4);  // taskset to 4 of a quota of 8
}

TEST(CpuQuotaTest, TheTightestQuotaOfThisProcessesCgroupAndItsAncestors) {
  testing_support::FakeRoot root("cpus");
  root.Write("proc/self/cgroup", "0::/system.slice/longqa.service\n");
  root.Write("sys/fs/cgroup/system.slice/longqa.service/cpu.max", "300000 100000\n");
  EXPECT_EQ(ReadCpuQuota(16, root.path()).usable_cpus, 3);
  // A tighter quota on the slice above the service (systemd's CPUQuota= on system.slice) holds.
  root.Write("sys/fs/cgroup/system.slice/cpu.max", "200000 100000\n");
  EXPECT_EQ(ReadCpuQuota(16, root.path()).usable_cpus, 2);
  // A looser one on the mount's root does not loosen the service's.
  root.Write("sys/fs/cgroup/system.slice/cpu.max", "max 100000\n");
  root.Write("sys/fs/cgroup/cpu.max", "800000 100000\n");
  EXPECT_EQ(ReadCpuQuota(16, root.path()).usable_cpus, 3);
  // Inside a container /proc/self/cgroup may name the host's path, which is not mounted there.
  root.Write("proc/self/cgroup", "0::/kubepods/pod1/abc\n");
  root.Write("sys/fs/cgroup/cpu.max", "400000 100000\n");
  EXPECT_EQ(ReadCpuQuota(16, root.path()).usable_cpus, 4);
}

TEST(CgroupFoldersTest, OwnThenEachAncestorThenTheMountOfThoseThatExist) {
  testing_support::FakeRoot root("cpus");
  const std::string mount = root.path() + "/sys/fs/cgroup";
  EXPECT_EQ(CgroupFolders("", root.path()), std::vector<std::string>{mount});  // no /proc
  root.Write("proc/self/cgroup", "4:cpu,cpuacct:/docker/abc\n0::/a/b/c\n");
  root.Write("sys/fs/cgroup/a/b/c/cpu.max", "max 100000\n");
  root.Write("sys/fs/cgroup/a/cpu.max", "max 100000\n");  // (a/b exists: c's parent)
  root.Write("sys/fs/cgroup/cpu/docker/abc/cpu.cfs_quota_us", "-1\n");
  EXPECT_EQ(CgroupFolders("", root.path()),
            (std::vector<std::string>{mount + "/a/b/c", mount + "/a/b", mount + "/a", mount}));
  EXPECT_EQ(
      CgroupFolders("cpu", root.path()),
      (std::vector<std::string>{mount + "/cpu/docker/abc", mount + "/cpu/docker", mount + "/cpu"}));
  EXPECT_EQ(CgroupFolders("cpuacct", root.path()), std::vector<std::string>{mount + "/cpuacct"});
  root.Write("proc/self/cgroup", "0::/gone/away\n");  // a host path not mounted here
  EXPECT_EQ(CgroupFolders("", root.path()), std::vector<std::string>{mount});
  EXPECT_EQ(CgroupFolders("memory", root.path()), std::vector<std::string>{mount + "/memory"});
}

TEST(CpuQuotaTest, ACgroupV1CfsQuota) {
  testing_support::FakeRoot root("cpus");
  root.Write("proc/self/cgroup", "4:cpu,cpuacct:/docker/abc\n3:memory:/docker/abc\n0::/\n");
  root.Write("sys/fs/cgroup/cpu/docker/abc/cpu.cfs_quota_us", "150000\n");
  root.Write("sys/fs/cgroup/cpu/docker/abc/cpu.cfs_period_us", "50000\n");
  EXPECT_EQ(ReadCpuQuota(32, root.path()).usable_cpus, 3);
  fs::remove_all(fs::path(root.path()) / "sys/fs/cgroup/cpu/docker");
  root.Write("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "600000\n");  // the container's own mount
  root.Write("sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(ReadCpuQuota(32, root.path()).usable_cpus, 6);
}

TEST(CpuQuotaTest, NonsenseInTheFilesMeansNoQuota) {
  testing_support::FakeRoot root("cpus");
  root.Write("proc/self/cgroup", "garbage\n0::/\n");
  for (const char* text : {"", "abc 100000\n", "200000\n", "200000 0\n", "-5 100000\n"}) {
    root.Write("sys/fs/cgroup/cpu.max", text);
    EXPECT_EQ(ReadCpuQuota(6, root.path()).usable_cpus, 6) << "cpu.max: '" << text << "'";
  }
}

TEST(CpuQuotaTest, ThisProcessHasAtLeastOneCpu) {
  const CpuQuota q = ThisProcessCpuQuota();
  EXPECT_GE(q.usable_cpus, 1);
  EXPECT_LE(q.usable_cpus, q.affinity_cpus);
}

TEST(CpuQuotaTest, WorkersShareTheCpusUnlessThreadsAreSet) {
  EXPECT_EQ(ThreadsPerWorker(0, 1, 8), 8);
  EXPECT_EQ(ThreadsPerWorker(0, 2, 8), 4);
  EXPECT_EQ(ThreadsPerWorker(0, 3, 8), 2);
  EXPECT_EQ(ThreadsPerWorker(0, 4, 2), 1);  // more workers than CPUs: one thread each
  EXPECT_EQ(ThreadsPerWorker(3, 2, 2), 3);  // the flag as given
}

TEST(CpuQuotaTest, WarnsWhenWorkersTimesThreadsExceedTheCpus) {
  EXPECT_EQ(OversubscriptionWarning(1, 2, 2), "");
  EXPECT_EQ(OversubscriptionWarning(2, 1, 2), "");
  const std::string w = OversubscriptionWarning(2, 2, 2);
  EXPECT_NE(w.find("2 worker(s) x 2 thread(s) on 2 usable CPU(s)"), std::string::npos) << w;
  EXPECT_NE(OversubscriptionWarning(1, 4, 2), "");
}

}  // namespace
}  // namespace longqa
