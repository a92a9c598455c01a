// The server's activation-memory budgets (admission by cost, docs/reliability.md): a request
// whose estimated activation memory (Engine::ActivationBytes) is over the per-request budget is
// refused with RESOURCE_EXHAUSTED before it is queued; a batch takes requests while their sum
// stays within the per-batch budget (a request that fits alone waits for a later batch).
// Defaults come from the memory the process may use: half of it, shared by the --workers that
// run batches at once; the rest is the model's weights, the queue's documents and headroom.
#pragma once

#include <cstdint>
#include <string>

namespace longqa {

// Bytes this process may use: the tightest cgroup memory limit (v2 memory.max, v1
// memory.limit_in_bytes) set on its own cgroup or an ancestor (model/cgroup_folders.h), at most
// the machine's MemTotal. `root` prefixes the paths read (tests point it at a fake tree). 0 when
// nothing could be read.
int64_t UsableMemoryBytes(const std::string& root = "");

struct MemoryBudget {
  int64_t batch_bytes = 0;
  int64_t request_bytes = 0;
};

// From the flags (MiB; 0 = derive): the batch budget defaults to usable / 2 / workers (no limit
// when the usable memory is unknown, 0), the request budget to the batch budget (a request must
// fit a batch alone).
MemoryBudget ResolveMemoryBudget(int64_t batch_mb, int64_t request_mb, int workers,
                                 int64_t usable_bytes);

}  // namespace longqa
