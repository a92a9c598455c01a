// How many CPUs this process may use, for the default thread count (--threads=0). A container
// limited to 2 CPUs on a 64-CPU host sees 64 CPUs in /proc and std::thread::hardware_concurrency,
// and 64 intra-op threads on a 2-CPU quota spend their time throttled and waiting on each other.
// So the count is the affinity mask's (taskset, cpuset, Kubernetes' static CPU manager), lowered
// by a cgroup CPU quota (cgroup v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us) rounded down,
// at least 1: what the JVM, .NET and Go's automaxprocs do.
#pragma once

#include <string>

namespace longqa {

struct CpuQuota {
  int affinity_cpus = 1;  // CPUs in this process's affinity mask
  double quota_cpus = 0;  // the cgroup's quota / period; 0 when none is set
  int usable_cpus = 1;    // min(affinity, floor(quota)), at least 1
};

// For the start-up log: "2 CPUs (cgroup quota 2.5 of 64)", or "8 CPUs" without a quota.
std::string DescribeCpuQuota(const CpuQuota& q);

// `root` prefixes the paths read (/proc/self/cgroup, /sys/fs/cgroup/...): tests point it at a
// fake tree. The quota is the tightest set on this process's cgroup or its ancestors
// (cgroup_folders.h): v2 cpu.max, v1 the cpu controller's files.
CpuQuota ReadCpuQuota(int affinity_cpus, const std::string& root = "");

// This process: sched_getaffinity's count and the cgroup files.
CpuQuota ThisProcessCpuQuota();

// Intra-op threads each of `workers` batch runners gets: `threads` when set (> 0), else the
// usable CPUs shared out, at least 1 each. (Measured on 2 CPUs: 2 workers x 2 threads answered
// 0.69x the requests of 2 workers x 1 thread: oversubscribed threads wait on each other.)
int ThreadsPerWorker(int threads, int workers, int usable_cpus);

// The warning when `workers` x `threads` exceeds the usable CPUs; empty when it does not.
std::string OversubscriptionWarning(int workers, int threads, int usable_cpus);

}  // namespace longqa
