// stable_counting_sort: checks and device dispatch; the CPU launcher runs the core of
// counting_sort.h, one segment per task.
#include "kernels/counting_sort.h"

#include "kernels/dispatch.h"
#include "kernels/ops.h"

namespace longqa::kernels {

at::Tensor StableCountingSort(const at::Tensor& keys_in, const at::Tensor& seg_offsets_in,
                              int64_t num_keys) {
  constexpr const char* kOp = "stable_counting_sort";
  TORCH_CHECK(num_keys >= 1, kOp, ": num_keys must be at least 1");
  const at::Tensor keys = IndexVector(keys_in, kOp, "keys", keys_in);
  const at::Tensor seg = IndexVector(seg_offsets_in, kOp, "seg_offsets", keys);
  TORCH_CHECK(seg.size(0) >= 1, kOp, ": seg_offsets needs at least one entry");
  const int64_t segments = seg.size(0) - 1;
  const int64_t n = keys.size(0);
  at::Tensor perm = at::empty({n}, keys.options());
  at::Tensor counts = at::empty({segments, num_keys + 1}, keys.options());
  if (n == 0 || segments == 0) return perm;
  if (keys.is_cuda()) {
    CheckLaunch(kOp, cuda::StableCountingSort(keys.data_ptr<int64_t>(), seg.data_ptr<int64_t>(),
                                              segments, num_keys, counts.data_ptr<int64_t>(),
                                              perm.data_ptr<int64_t>(), StreamFor(keys)));
    return perm;
  }
  TORCH_CHECK(keys.is_cpu(), kOp, ": unsupported device ", keys.device());
  const int64_t* off = seg.data_ptr<int64_t>();
  TORCH_CHECK(off[0] == 0 && off[segments] == n, kOp, ": seg_offsets must run from 0 to ", n);
  for (int64_t s = 0; s < segments; ++s) {
    TORCH_CHECK(off[s] <= off[s + 1], kOp, ": seg_offsets must not decrease");
  }
  TORCH_CHECK(keys.min().item<int64_t>() >= 0 && keys.max().item<int64_t>() < num_keys, kOp,
              ": keys must lie in [0, ", num_keys, ")");
  const int64_t* k = keys.data_ptr<int64_t>();
  int64_t* cnt = counts.data_ptr<int64_t>();
  int64_t* p = perm.data_ptr<int64_t>();
  ParallelRows(segments, n / segments + num_keys, [&](int64_t s) {
    StableCountingSortSegment(s, k, off, num_keys, cnt + s * (num_keys + 1), p);
  });
  return perm;
}

}  // namespace longqa::kernels
