// Where this process's cgroup limits are: the folders of its own cgroup and of each ancestor, for
// the defaults that follow the limits (the thread count, model/cpu_quota.h; the memory budgets,
// server/memory_budget.h).
#pragma once

#include <string>
#include <vector>

namespace longqa {

// The folders of the cgroups that bound this process, read from /proc/self/cgroup: for cgroup v2
// (controller "") or one v1 controller ("cpu", "memory"), its own cgroup's folder under the
// controller's mount, then each ancestor's, then the mount itself. A limit may be set on any of
// them (systemd sets MemoryMax= and CPUQuota= on a service or on the slice above it), and the
// tightest one holds. Folders that do not exist are left out: inside a container
// /proc/self/cgroup may name the host's path, and the mount is the container's own cgroup.
// `root` prefixes the paths read (tests point it at a fake tree).
std::vector<std::string> CgroupFolders(const std::string& controller, const std::string& root = "");

// The tightest limit that bounds this process: the smallest positive read(folder) over the cgroup
// v2 folders (read_v2) and those of the v1 controller `v1_controller` (read_v1), each 0 where a
// folder sets none; 0 when none does.
template <typename T, typename ReadV2, typename ReadV1>
T TightestCgroupLimit(const std::string& v1_controller, const std::string& root, ReadV2&& read_v2,
                      ReadV1&& read_v1) {
  T tightest = 0;
  const auto take = [&](T limit) {
    if (limit > 0 && (tightest == 0 || limit < tightest)) tightest = limit;
  };
  for (const std::string& dir : CgroupFolders("", root)) take(read_v2(dir));
  for (const std::string& dir : CgroupFolders(v1_controller, root)) take(read_v1(dir));
  return tightest;
}

}  // namespace longqa
