// hamming_assign: checks and device dispatch for the cores of hamming_assign.h.
#include "kernels/hamming_assign.h"

#include "kernels/dispatch.h"
#include "kernels/ops.h"

namespace longqa::kernels {

at::Tensor HammingAssign(const at::Tensor& codes_in, const at::Tensor& centroids_in) {
  constexpr const char* kOp = "hamming_assign";
  TORCH_CHECK(codes_in.dim() == 2 && codes_in.scalar_type() == at::kLong, kOp,
              ": codes must be [groups, n] int64, got ", codes_in.sizes(), " ",
              codes_in.scalar_type());
  TORCH_CHECK(centroids_in.dim() == 2 && centroids_in.scalar_type() == at::kLong &&
                  centroids_in.size(0) == codes_in.size(0),
              kOp, ": centroids must be [", codes_in.size(0), ", C] int64, got ",
              centroids_in.sizes(), " ", centroids_in.scalar_type());
  TORCH_CHECK(centroids_in.size(1) >= 1, kOp, ": needs at least one centroid per group");
  TORCH_CHECK(centroids_in.device() == codes_in.device(), kOp,
              ": codes and centroids on different devices");
  const at::Tensor codes = codes_in.contiguous();
  const at::Tensor centroids = centroids_in.contiguous();
  const int64_t n = codes.size(1);
  const int64_t c = centroids.size(1);
  const int64_t rows = codes.numel();
  at::Tensor out = at::empty_like(codes);
  if (rows == 0) return out;
  if (codes.is_cuda()) {
    CheckLaunch(
        kOp, cuda::HammingAssign(codes.data_ptr<int64_t>(), rows, n, centroids.data_ptr<int64_t>(),
                                 c, out.data_ptr<int64_t>(), StreamFor(codes)));
    return out;
  }
  TORCH_CHECK(codes.is_cpu(), kOp, ": unsupported device ", codes.device());
  const int64_t* q = codes.data_ptr<int64_t>();
  const int64_t* cen = centroids.data_ptr<int64_t>();
  int64_t* o = out.data_ptr<int64_t>();
  ParallelRows(rows, c, [&](int64_t r) { NearestCode(r, q, n, cen, c, o); });
  return out;
}

at::Tensor HammingMajority(const at::Tensor& codes_in, const at::Tensor& order_in,
                           const at::Tensor& offsets_in, const at::Tensor& centroids_in,
                           int64_t bits) {
  constexpr const char* kOp = "hamming_majority";
  TORCH_CHECK(bits >= 1 && bits <= 63, kOp, ": bits must be in [1, 63], got ", bits);
  TORCH_CHECK(codes_in.scalar_type() == at::kLong && centroids_in.scalar_type() == at::kLong &&
                  codes_in.dim() == 2 && centroids_in.dim() == 2 &&
                  centroids_in.size(0) == codes_in.size(0),
              kOp, ": codes [G, N] and centroids [G, C] int64, got ", codes_in.sizes(), " and ",
              centroids_in.sizes());
  const at::Tensor codes = codes_in.contiguous();
  const at::Tensor centroids = centroids_in.contiguous();
  const at::Tensor order = IndexVector(order_in, kOp, "order", codes);
  const at::Tensor offsets = IndexVector(offsets_in, kOp, "offsets", codes);
  const int64_t clusters = centroids.numel();
  TORCH_CHECK(order.size(0) == codes.numel(), kOp, ": order must have ", codes.numel(), " entries");
  TORCH_CHECK(offsets.size(0) == clusters + 1, kOp, ": offsets must have ", clusters + 1,
              " entries");
  at::Tensor out = at::empty_like(centroids);
  if (clusters == 0) return out;
  if (codes.is_cuda()) {
    CheckLaunch(kOp,
                cuda::HammingMajority(codes.data_ptr<int64_t>(), order.data_ptr<int64_t>(),
                                      offsets.data_ptr<int64_t>(), centroids.data_ptr<int64_t>(),
                                      clusters, bits, out.data_ptr<int64_t>(), StreamFor(codes)));
    return out;
  }
  TORCH_CHECK(codes.is_cpu(), kOp, ": unsupported device ", codes.device());
  const int64_t* off = offsets.data_ptr<int64_t>();
  TORCH_CHECK(off[0] == 0 && off[clusters] == codes.numel(), kOp, ": offsets must run from 0 to ",
              codes.numel());
  const int64_t* ord = order.data_ptr<int64_t>();
  for (int64_t i = 0; i < order.size(0); ++i) {
    TORCH_CHECK(ord[i] >= 0 && ord[i] < codes.numel(), kOp, ": order entries must lie in [0, ",
                codes.numel(), ")");
  }
  const int64_t* q = codes.data_ptr<int64_t>();
  const int64_t* old = centroids.data_ptr<int64_t>();
  int64_t* o = out.data_ptr<int64_t>();
  ParallelRows(clusters, bits * codes.numel() / clusters + 1,
               [&](int64_t c) { MajorityCode(c, q, ord, off, old, bits, o); });
  return out;
}

}  // namespace longqa::kernels
