// relative_label_gather: checks and device dispatch; the CPU launcher runs the core of
// relative_label_gather.h.
#include "kernels/relative_label_gather.h"

#include "kernels/dispatch.h"
#include "kernels/ops.h"

namespace longqa::kernels {

at::Tensor RelativeLabelGather(const at::Tensor& qa_in, const at::Tensor& labels_in) {
  constexpr const char* kOp = "relative_label_gather";
  TORCH_CHECK(qa_in.dim() == 3, kOp, ": qa must be [rows, heads, labels], got ", qa_in.sizes());
  TORCH_CHECK(labels_in.dim() == 2 && labels_in.scalar_type() == at::kLong, kOp,
              ": labels must be a 2-D int64 [period, slots] table");
  TORCH_CHECK(labels_in.size(0) >= 1, kOp, ": labels needs at least one row");
  TORCH_CHECK(labels_in.device() == qa_in.device(), kOp, ": labels and qa on different devices");
  const at::Tensor qa = qa_in.contiguous();
  const at::Tensor labels = labels_in.contiguous();
  const int64_t rows = qa.size(0), heads = qa.size(1), num_labels = qa.size(2);
  const int64_t period = labels.size(0), slots = labels.size(1);
  at::Tensor out = at::empty({rows, heads, slots}, qa.options());
  if (out.numel() == 0) return out;
  if (qa.is_cuda()) {
    CheckLaunch(kOp, cuda::RelativeLabelGather(ToCudaDType(qa.scalar_type(), kOp), qa.data_ptr(),
                                               rows, heads, num_labels, labels.data_ptr<int64_t>(),
                                               period, slots, out.data_ptr(), StreamFor(qa)));
    return out;
  }
  TORCH_CHECK(qa.is_cpu(), kOp, ": unsupported device ", qa.device());
  TORCH_CHECK(labels.min().item<int64_t>() >= -1 && labels.max().item<int64_t>() < num_labels, kOp,
              ": labels must lie in [-1, ", num_labels, ")");
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, qa.scalar_type(), kOp, [&] {
    const scalar_t* q = qa.data_ptr<scalar_t>();
    const int64_t* l = labels.data_ptr<int64_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    ParallelRows(rows, heads * slots, [&](int64_t r) {
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t s = 0; s < slots; ++s) {
          RelativeLabelGatherAt(r, h, s, q, heads, num_labels, l, period, slots, o);
        }
      }
    });
  });
  return out;
}

}  // namespace longqa::kernels
