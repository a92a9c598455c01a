// overlap_merge: checks and device dispatch; the CPU launcher runs the core of overlap_merge.h.
#include "kernels/overlap_merge.h"

#include "kernels/dispatch.h"
#include "kernels/ops.h"

namespace longqa::kernels {

at::Tensor OverlapMerge(const at::Tensor& src_in, const at::Tensor& offsets_in,
                        const at::Tensor& sources_in) {
  constexpr const char* kOp = "overlap_merge";
  const at::Tensor src = RowMajor2d(src_in, kOp, "src");
  const at::Tensor offsets = IndexVector(offsets_in, kOp, "offsets", src);
  const at::Tensor sources = IndexVector(sources_in, kOp, "sources", src);
  TORCH_CHECK(offsets.size(0) >= 1, kOp, ": offsets needs at least one entry");
  const int64_t rows = offsets.size(0) - 1;
  const int64_t d = src.size(1);
  at::Tensor out = at::empty({rows, d}, src.options().memory_format(at::MemoryFormat::Contiguous));
  if (rows == 0 || d == 0) return out;
  if (src.is_cuda()) {
    CheckLaunch(
        kOp, cuda::OverlapMerge(ToCudaDType(src.scalar_type(), kOp), src.data_ptr(), src.stride(0),
                                offsets.data_ptr<int64_t>(), sources.data_ptr<int64_t>(), rows, d,
                                out.data_ptr(), StreamFor(src)));
    return out;
  }
  TORCH_CHECK(src.is_cpu(), kOp, ": unsupported device ", src.device());
  const int64_t* off = offsets.data_ptr<int64_t>();
  TORCH_CHECK(off[0] == 0 && off[rows] == sources.size(0), kOp,
              ": offsets must run from 0 to sources.size(0)");
  for (int64_t r = 0; r < rows; ++r) {
    TORCH_CHECK(off[r] <= off[r + 1], kOp, ": offsets must not decrease (row ", r, ")");
  }
  if (sources.size(0) > 0) {
    TORCH_CHECK(sources.min().item<int64_t>() >= 0 && sources.max().item<int64_t>() < src.size(0),
                kOp, ": sources must lie in [0, ", src.size(0), ")");
  }
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, src.scalar_type(), kOp, [&] {
    const scalar_t* s = src.data_ptr<scalar_t>();
    const int64_t* srcs = sources.data_ptr<int64_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    const int64_t stride = src.stride(0);
    ParallelRows(rows, d, [&](int64_t r) {
      for (int64_t c = 0; c < d; ++c) {
        OverlapMergeElement<scalar_t, AccType<scalar_t>>(r * d + c, s, stride, off, srcs, d, o);
      }
    });
  });
  return out;
}

}  // namespace longqa::kernels
