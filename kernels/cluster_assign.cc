// cluster_assign: cosine similarities by one GEMM in LibTorch, then the row-argmax core of
// cluster_assign.h on CPU or CUDA (also an op of its own, ScoreArgmax).
#include "kernels/cluster_assign.h"

#include "kernels/dispatch.h"
#include "kernels/ops.h"

namespace longqa::kernels {

at::Tensor ClusterAssign(const at::Tensor& rows_in, const at::Tensor& centroids) {
  constexpr const char* kOp = "cluster_assign";
  const at::Tensor rows = RowMajor2d(rows_in, kOp, "rows");
  TORCH_CHECK(centroids.dim() == 2 && centroids.size(1) == rows.size(1), kOp,
              ": centroids must be [C, ", rows.size(1), "], got ", centroids.sizes());
  TORCH_CHECK(centroids.size(0) >= 1, kOp, ": needs at least one centroid");
  TORCH_CHECK(centroids.device() == rows.device(), kOp,
              ": centroids and rows on different devices");
  // A row's own norm does not change its argmax, so only the centroids are normalised.
  // LibTorch 1.13 lacks some f16 CPU kernels: reduced precision on CPU scores in f32.
  const bool upcast = rows.is_cpu() && rows.scalar_type() != at::kDouble;
  const at::ScalarType score_type = upcast ? at::kFloat : rows.scalar_type();
  const at::Tensor c32 = centroids.to(at::kFloat);
  const at::Tensor unit = c32 / c32.norm(2, {1}, true).clamp_min(1e-12);
  return ScoreArgmax(at::matmul(rows.to(score_type), unit.to(score_type).t()));
}

at::Tensor ScoreArgmax(const at::Tensor& scores_in) {
  constexpr const char* kOp = "score_argmax";
  const at::Tensor scores = RowMajor2d(scores_in, kOp, "scores").contiguous();
  const int64_t n = scores.size(0);
  const int64_t c = scores.size(1);
  TORCH_CHECK(c >= 1, kOp, ": needs at least one column");
  at::Tensor out = at::empty({n}, scores.options().dtype(at::kLong));
  if (n == 0) return out;
  if (scores.is_cuda()) {
    CheckLaunch(kOp, cuda::RowArgmax(ToCudaDType(scores.scalar_type(), kOp), scores.data_ptr(), n,
                                     c, out.data_ptr<int64_t>(), StreamFor(scores)));
    return out;
  }
  TORCH_CHECK(scores.is_cpu(), kOp, ": unsupported device ", scores.device());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, scores.scalar_type(), kOp, [&] {
    const scalar_t* s = scores.data_ptr<scalar_t>();
    int64_t* o = out.data_ptr<int64_t>();
    ParallelRows(n, c, [&](int64_t r) { RowArgmax(r, s, c, o); });
  });
  return out;
}

}  // namespace longqa::kernels
