#include "model/cpu_quota.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace longqa {

namespace {

// This process's cgroup paths from /proc/self/cgroup: v2's ("0::/path") under the key "", v1's
// under each controller of its line ("4:cpu,cpuacct:/path" gives "cpu" and "cpuacct").
std::vector<std::pair<std::string, std::string>> OwnCgroups(const std::string& root) {
  std::vector<std::pair<std::string, std::string>> paths;
  std::ifstream in(root + "/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const size_t first = line.find(':');
    const size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string path = line.substr(second + 1);
    std::stringstream controllers(line.substr(first + 1, second - first - 1));
    std::string controller;
    if (controllers.peek() == std::char_traits<char>::eof()) paths.emplace_back("", path);
    while (std::getline(controllers, controller, ',')) paths.emplace_back(controller, path);
  }
  return paths;
}

std::string OwnPath(const std::vector<std::pair<std::string, std::string>>& paths,
                    const std::string& controller) {
  for (const auto& [name, path] : paths) {
    if (name == controller) return path == "/" ? "" : path;
  }
  return "";
}

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

// The first of the files that exists and sets a quota: this process's own cgroup first, then the
// mount's root (inside a container the mount is the container's cgroup while /proc/self/cgroup
// may name the host's path for it).
double ReadQuota(const std::string& root) {
  const auto paths = OwnCgroups(root);
  const std::string mount = root + "/sys/fs/cgroup";
  for (const std::string& dir : {mount + OwnPath(paths, ""), mount}) {
    if (const double cpus = ReadCpuMax(dir + "/cpu.max"); cpus > 0) return cpus;
  }
  for (const std::string& dir : {mount + "/cpu" + OwnPath(paths, "cpu"), mount + "/cpu"}) {
    if (const double cpus = ReadCfsQuota(dir); cpus > 0) return cpus;
  }
  return 0;
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
