#include "model/cpu_quota.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "model/cgroup_folders.h"

namespace longqa {

namespace {

// The quota in CPUs from a quota and a period in microseconds; 0 for none or nonsense.
double QuotaCpus(double quota, double period) {
  return quota > 0 && period > 0 && std::isfinite(quota / period) ? quota / period : 0;
}

// cgroup v2: "max 100000" (no limit) or "200000 100000".
double ReadCpuMax(const std::string& path) {
  std::ifstream in(path);
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max") return 0;
  try {
    return QuotaCpus(std::stod(quota), period);
  } catch (const std::exception&) {
    return 0;
  }
}

// cgroup v1: cpu.cfs_quota_us (-1: no limit) and cpu.cfs_period_us.
double ReadCfsQuota(const std::string& dir) {
  std::ifstream quota_in(dir + "/cpu.cfs_quota_us");
  std::ifstream period_in(dir + "/cpu.cfs_period_us");
  double quota = 0, period = 0;
  if (!(quota_in >> quota) || !(period_in >> period)) return 0;
  return QuotaCpus(quota, period);
}

// The tightest quota set on this process's cgroup or an ancestor (cgroup_folders.h), v2 or v1;
// 0 when none is.
double ReadQuota(const std::string& root) {
  return TightestCgroupLimit<double>(
      "cpu", root, [](const std::string& dir) { return ReadCpuMax(dir + "/cpu.max"); },
      ReadCfsQuota);
}

}  // namespace

CpuQuota ReadCpuQuota(int affinity_cpus, const std::string& root) {
  CpuQuota q;
  q.affinity_cpus = std::max(1, affinity_cpus);
  q.quota_cpus = ReadQuota(root);
  q.usable_cpus = q.affinity_cpus;
  if (q.quota_cpus > 0) {
    q.usable_cpus = std::clamp(static_cast<int>(std::floor(q.quota_cpus)), 1, q.affinity_cpus);
  }
  return q;
}

std::string DescribeCpuQuota(const CpuQuota& q) {
  std::string line = std::to_string(q.usable_cpus) + (q.usable_cpus == 1 ? " CPU" : " CPUs");
  if (q.quota_cpus > 0) {
    char quota[32];
    std::snprintf(quota, sizeof(quota), "%g", q.quota_cpus);
    line += std::string(" (cgroup quota ") + quota + " of " + std::to_string(q.affinity_cpus) + ")";
  }
  return line;
}

CpuQuota ThisProcessCpuQuota() {
  cpu_set_t set;
  CPU_ZERO(&set);
  int affinity = 1;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) affinity = CPU_COUNT(&set);
  return ReadCpuQuota(affinity);
}

int ThreadsPerWorker(int threads, int workers, int usable_cpus) {
  if (threads > 0) return threads;
  return std::max(1, usable_cpus / std::max(1, workers));
}

std::string OversubscriptionWarning(int workers, int threads, int usable_cpus) {
  if (static_cast<int64_t>(workers) * threads <= usable_cpus) return "";
  return std::to_string(workers) + " worker(s) x " + std::to_string(threads) + " thread(s) on " +
         std::to_string(usable_cpus) +
         " usable CPU(s): batches that run at once wait on each other's threads (leave --threads "
         "at 0 to share the CPUs out among the workers)";
}

}  // namespace longqa
