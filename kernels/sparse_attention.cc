// sparse_attention: checks and device dispatch for the cores of sparse_attention.h.
#include "kernels/sparse_attention.h"

#include "kernels/dispatch.h"
#include "kernels/ops.h"

namespace longqa::kernels {
namespace {

// Checks a [groups, rows, cols] data tensor against `like`'s groups, dtype and device.
at::Tensor Grouped3d(const at::Tensor& t, const char* op, const char* name,
                     const at::Tensor& like) {
  TORCH_CHECK(t.dim() == 3, op, ": ", name, " must be 3-D [groups, rows, d], got ", t.sizes());
  TORCH_CHECK(t.size(0) == like.size(0), op, ": ", name, " has ", t.size(0), " groups, not ",
              like.size(0));
  TORCH_CHECK(t.scalar_type() == like.scalar_type(), op, ": ", name, " is ", t.scalar_type(),
              ", not ", like.scalar_type());
  TORCH_CHECK(t.device() == like.device(), op, ": ", name, " on ", t.device(), ", not ",
              like.device());
  return t.contiguous();
}

// Checks index [groups, n, s] int64 in [0, m) (the range on CPU only: it would cost a sync).
at::Tensor KeyIndex(const at::Tensor& index_in, const char* op, const at::Tensor& rows, int64_t m) {
  TORCH_CHECK(index_in.dim() == 3 && index_in.scalar_type() == at::kLong, op,
              ": index must be [groups, n, s] int64, got ", index_in.sizes(), " ",
              index_in.scalar_type());
  TORCH_CHECK(index_in.size(0) == rows.size(0) && index_in.size(1) == rows.size(1), op,
              ": index must be [", rows.size(0), ", ", rows.size(1), ", s], got ",
              index_in.sizes());
  TORCH_CHECK(index_in.device() == rows.device(), op, ": index on ", index_in.device());
  const at::Tensor index = index_in.contiguous();
  if (index.is_cpu() && index.numel() > 0) {
    TORCH_CHECK(index.min().item<int64_t>() >= 0 && index.max().item<int64_t>() < m, op,
                ": index must lie in [0, ", m, ")");
  }
  return index;
}

}  // namespace

at::Tensor SparseDotProduct(const at::Tensor& q_in, const at::Tensor& k_in,
                            const at::Tensor& index_in) {
  constexpr const char* kOp = "sparse_dot_product";
  TORCH_CHECK(q_in.dim() == 3, kOp, ": q must be 3-D [groups, n, d], got ", q_in.sizes());
  const at::Tensor q = q_in.contiguous();
  const at::Tensor k = Grouped3d(k_in, kOp, "k", q);
  TORCH_CHECK(k.size(2) == q.size(2), kOp, ": k must have d = ", q.size(2));
  const at::Tensor index = KeyIndex(index_in, kOp, q, k.size(1));
  const int64_t n = q.size(1), m = k.size(1), s = index.size(2), d = q.size(2);
  at::Tensor out = at::empty({q.size(0), n, s}, q.options());
  const int64_t total = out.numel();
  if (total == 0) return out;
  if (q.is_cuda()) {
    CheckLaunch(kOp, cuda::SparseDotProduct(ToCudaDType(q.scalar_type(), kOp), q.data_ptr(),
                                            k.data_ptr(), index.data_ptr<int64_t>(), q.size(0), n,
                                            m, s, d, out.data_ptr(), StreamFor(q)));
    return out;
  }
  TORCH_CHECK(q.is_cpu(), kOp, ": unsupported device ", q.device());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, q.scalar_type(), kOp, [&] {
    const scalar_t* qp = q.data_ptr<scalar_t>();
    const scalar_t* kp = k.data_ptr<scalar_t>();
    const int64_t* ip = index.data_ptr<int64_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    ParallelRows(total, d, [&](int64_t i) {
      SparseDotElement<scalar_t, AccType<scalar_t>>(i, qp, kp, ip, n, m, s, d, o);
    });
  });
  return out;
}

at::Tensor SparseWeightedSum(const at::Tensor& weights_in, const at::Tensor& v_in,
                             const at::Tensor& index_in) {
  constexpr const char* kOp = "sparse_weighted_sum";
  TORCH_CHECK(weights_in.dim() == 3, kOp, ": weights must be 3-D [groups, n, s], got ",
              weights_in.sizes());
  const at::Tensor weights = weights_in.contiguous();
  const at::Tensor v = Grouped3d(v_in, kOp, "v", weights);
  const at::Tensor index = KeyIndex(index_in, kOp, weights, v.size(1));
  TORCH_CHECK(index.size(2) == weights.size(2), kOp, ": index must have s = ", weights.size(2));
  const int64_t n = weights.size(1), m = v.size(1), s = weights.size(2), dv = v.size(2);
  at::Tensor out = at::empty({weights.size(0), n, dv}, weights.options());
  const int64_t total = out.numel();
  if (total == 0) return out;
  if (s == 0) return out.zero_();
  if (weights.is_cuda()) {
    CheckLaunch(
        kOp, cuda::SparseWeightedSum(ToCudaDType(weights.scalar_type(), kOp), weights.data_ptr(),
                                     v.data_ptr(), index.data_ptr<int64_t>(), weights.size(0), n, m,
                                     s, dv, out.data_ptr(), StreamFor(weights)));
    return out;
  }
  TORCH_CHECK(weights.is_cpu(), kOp, ": unsupported device ", weights.device());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, weights.scalar_type(), kOp, [&] {
    const scalar_t* w = weights.data_ptr<scalar_t>();
    const scalar_t* vp = v.data_ptr<scalar_t>();
    const int64_t* ip = index.data_ptr<int64_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    ParallelRows(total, s, [&](int64_t i) {
      SparseWeightedSumElement<scalar_t, AccType<scalar_t>>(i, w, vp, ip, n, m, s, dv, o);
    });
  });
  return out;
}

}  // namespace longqa::kernels
