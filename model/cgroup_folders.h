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

}  // namespace longqa
