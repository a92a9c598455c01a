// gather_rows: checks and device dispatch; the CPU launcher runs the core of gather_rows.h.
#include "kernels/gather_rows.h"

#include "kernels/dispatch.h"
#include "kernels/ops.h"

namespace longqa::kernels {

at::Tensor GatherRows(const at::Tensor& src_in, const at::Tensor& index_in) {
  constexpr const char* kOp = "gather_rows";
  const at::Tensor src = RowMajor2d(src_in, kOp, "src");
  const at::Tensor index = IndexVector(index_in, kOp, "index", src);
  const int64_t rows = index.size(0);
  const int64_t d = src.size(1);
  const int64_t n_src = src.size(0);
  at::Tensor out = at::empty({rows, d}, src.options().memory_format(at::MemoryFormat::Contiguous));
  if (rows == 0 || d == 0) return out;
  if (src.is_cuda()) {
    CheckLaunch(kOp, cuda::GatherRows(ToCudaDType(src.scalar_type(), kOp), src.data_ptr(),
                                      src.stride(0), n_src, index.data_ptr<int64_t>(), rows, d,
                                      out.data_ptr(), StreamFor(src)));
    return out;
  }
  TORCH_CHECK(src.is_cpu(), kOp, ": unsupported device ", src.device());
  if (rows > 0) {
    const int64_t lo = index.min().item<int64_t>();
    const int64_t hi = index.max().item<int64_t>();
    TORCH_CHECK(lo >= -1 && hi < n_src, kOp, ": index values must lie in [-1, ", n_src, "), got [",
                lo, ", ", hi, "]");
  }
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, src.scalar_type(), kOp, [&] {
    const scalar_t* s = src.data_ptr<scalar_t>();
    const int64_t* idx = index.data_ptr<int64_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    const int64_t stride = src.stride(0);
    ParallelRows(rows, d, [&](int64_t r) {
      for (int64_t c = 0; c < d; ++c) GatherRowsAt(r, c, s, stride, n_src, idx, d, o);
    });
  });
  return out;
}

at::Tensor InvertPermutation(const at::Tensor& perm) {
  TORCH_CHECK(perm.dim() == 1 && perm.scalar_type() == at::kLong,
              "invert_permutation: perm must be 1-D int64");
  at::Tensor inv = at::empty_like(perm);
  inv.index_put_({perm}, at::arange(perm.size(0), perm.options()));
  return inv;
}

}  // namespace longqa::kernels
