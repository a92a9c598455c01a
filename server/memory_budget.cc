#include "server/memory_budget.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include "model/cgroup_folders.h"

namespace longqa {

namespace {

// A cgroup limit file: a byte count, or "max" / a huge number meaning no limit (0 then).
int64_t ReadLimit(const std::string& path) {
  std::ifstream in(path);
  std::string value;
  if (!(in >> value) || value == "max") return 0;
  try {
    const int64_t bytes = std::stoll(value);
    return bytes > 0 && bytes < (int64_t{1} << 60) ? bytes : 0;  // v1 "no limit" is ~2^63
  } catch (const std::exception&) {
    return 0;
  }
}

int64_t MemTotalBytes(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemTotal:", 0) == 0) {
      std::istringstream fields(line.substr(9));
      int64_t kib = 0;
      if (fields >> kib) return kib * 1024;
    }
  }
  return 0;
}

}  // namespace

int64_t UsableMemoryBytes(const std::string& root) {
  const int64_t total = MemTotalBytes(root + "/proc/meminfo");
  const int64_t limit = TightestCgroupLimit<int64_t>(
      "memory", root, [](const std::string& dir) { return ReadLimit(dir + "/memory.max"); },
      [](const std::string& dir) { return ReadLimit(dir + "/memory.limit_in_bytes"); });
  if (limit == 0) return total;
  return total == 0 ? limit : std::min(limit, total);
}

MemoryBudget ResolveMemoryBudget(int64_t batch_mb, int64_t request_mb, int workers,
                                 int64_t usable_bytes) {
  MemoryBudget budget;
  if (batch_mb > 0) {
    budget.batch_bytes = batch_mb << 20;
  } else if (usable_bytes > 0) {
    budget.batch_bytes = usable_bytes / 2 / std::max(1, workers);
  } else {
    budget.batch_bytes = std::numeric_limits<int64_t>::max();  // memory unknown: no limit
  }
  budget.request_bytes = request_mb > 0 ? request_mb << 20 : budget.batch_bytes;
  return budget;
}

}  // namespace longqa
