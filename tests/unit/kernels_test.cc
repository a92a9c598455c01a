// Every kernel op against a plain LibTorch formulation on random inputs, for every dtype and
// device of the build (CPU always; CUDA where a GPU is present), with odd sizes and strided rows.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/ops.h"

namespace longqa::kernels {
namespace {

struct Case {
  at::Device device;
  at::ScalarType dtype;
  double tolerance;  // max abs error against the fp64 reference
};

std::vector<Case> AllCases() {
  std::vector<Case> cases = {{at::kCPU, at::kFloat, 1e-6},
                             {at::kCPU, at::kDouble, 1e-12},
                             {at::kCPU, at::kBFloat16, 2e-2},
                             {at::kCPU, at::kHalf, 2e-3}};
  if (at::hasCUDA()) {
    cases.push_back({at::kCUDA, at::kFloat, 1e-6});
    cases.push_back({at::kCUDA, at::kHalf, 2e-3});
    cases.push_back({at::kCUDA, at::kBFloat16, 2e-2});
  }
  return cases;
}

// Keeps CTest's test names readable (gtest would print the struct's bytes).
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.device << "/" << c.dtype << " tol " << c.tolerance;
}

std::string CaseName(const testing::TestParamInfo<Case>& info) {
  return std::string(info.param.device.is_cuda() ? "cuda_" : "cpu_") +
         c10::toString(info.param.dtype);
}

class KernelOpTest : public testing::TestWithParam<Case> {
 protected:
  void SetUp() override { at::manual_seed(1234); }
  at::Tensor Random(at::IntArrayRef shape) const {
    return at::randn(shape, at::kDouble).to(GetParam().dtype).to(GetParam().device);
  }
  at::Tensor Long(const std::vector<int64_t>& v) const {
    return at::tensor(v, at::kLong).to(GetParam().device);
  }
  void ExpectClose(const at::Tensor& got, const at::Tensor& want) const {
    ASSERT_EQ(got.sizes(), want.sizes());
    const double err = (got.to(at::kCPU).to(at::kDouble) - want.to(at::kCPU).to(at::kDouble))
                           .abs()
                           .max()
                           .item<double>();
    EXPECT_LE(err, GetParam().tolerance);
  }
};

TEST_P(KernelOpTest, GatherRowsMatchesIndexSelectWithZeroPadding) {
  for (auto [n, m, d] :
       std::vector<std::array<int64_t, 3>>{{769, 1031, 37}, {5, 3, 1}, {1, 7, 768}}) {
    // Strided rows: a column slice of a wider matrix.
    const at::Tensor wide = Random({n, d + 5});
    const at::Tensor src = wide.narrow(1, 2, d);
    if (n > 1) {
      ASSERT_FALSE(src.is_contiguous());
    }
    const at::Tensor index = at::randint(-1, n, {m}, at::kLong).to(GetParam().device);
    const at::Tensor got = GatherRows(src, index);
    const at::Tensor src64 = src.to(at::kDouble);
    const at::Tensor want =
        at::where((index >= 0).unsqueeze(1), src64.index_select(0, index.clamp_min(0)),
                  at::zeros({1}, src64.options()));
    ExpectClose(got, want.to(GetParam().dtype).to(at::kDouble));
  }
}

TEST_P(KernelOpTest, GatherRowsAcceptsTransposedInput) {
  const at::Tensor src = Random({9, 13}).t();  // [13, 9], column-major
  const at::Tensor index = Long({12, 0, -1, 5});
  ExpectClose(GatherRows(src, index).to(at::kDouble),
              at::cat({src[12].unsqueeze(0), src[0].unsqueeze(0), at::zeros({1, 9}, src.options()),
                       src[5].unsqueeze(0)})
                  .to(at::kDouble));
}

TEST_P(KernelOpTest, OverlapMergeIsTheMeanOfEachRowList) {
  const int64_t n = 517, d = 29, rows = 301;
  const at::Tensor src = Random({n, d});
  std::vector<int64_t> offsets = {0}, sources;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t count = r % 4;  // 0 (empty) to 3 sources
    for (int64_t k = 0; k < count; ++k) sources.push_back((r * 31 + k * 97) % n);
    offsets.push_back(static_cast<int64_t>(sources.size()));
  }
  const at::Tensor got = OverlapMerge(src, Long(offsets), Long(sources));
  const at::Tensor src64 = src.to(at::kCPU).to(at::kDouble);
  at::Tensor want = at::zeros({rows, d}, at::kDouble);
  for (int64_t r = 0; r < rows; ++r) {
    if (offsets[r + 1] == offsets[r]) continue;
    const at::Tensor idx = at::tensor(
        std::vector<int64_t>(sources.begin() + offsets[r], sources.begin() + offsets[r + 1]),
        at::kLong);
    want[r] = src64.index_select(0, idx).mean(0);
  }
  ExpectClose(got, want);
}

TEST_P(KernelOpTest, ClusterAssignIsCosineArgmax) {
  const int64_t n = 1001, d = 24, c = 37;
  const at::Tensor rows = Random({n, d});
  const at::Tensor centroids = Random({c, d}) * 3.0;  // non-unit norms
  const at::Tensor got = ClusterAssign(rows, centroids).to(at::kCPU);
  const at::Tensor r64 = rows.to(at::kCPU).to(at::kDouble);
  const at::Tensor c64 = centroids.to(at::kCPU).to(at::kDouble);
  const at::Tensor cosine =
      at::matmul(r64 / r64.norm(2, {1}, true), (c64 / c64.norm(2, {1}, true)).t());
  const at::Tensor want = cosine.argmax(1);
  // Reduced precision can flip near-ties: require the chosen centroid to be within tolerance.
  const at::Tensor chosen = cosine.gather(1, got.unsqueeze(1)).squeeze(1);
  const at::Tensor best = cosine.gather(1, want.unsqueeze(1)).squeeze(1);
  EXPECT_LE((best - chosen).max().item<double>(), 10 * GetParam().tolerance);
  if (GetParam().dtype == at::kFloat || GetParam().dtype == at::kDouble) {
    EXPECT_TRUE(at::equal(got, want));
  }
}

TEST_P(KernelOpTest, ClusterAssignBreaksTiesTowardTheLowestId) {
  const at::Tensor row = Random({1, 8});
  const at::Tensor centroids = at::cat({-row, row * 2.0, row * 5.0});  // ids 1 and 2 tie
  EXPECT_EQ(ClusterAssign(row, centroids).to(at::kCPU).item<int64_t>(), 1);
}

TEST_P(KernelOpTest, StableCountingSortMatchesStableSortPerSegment) {
  const std::vector<int64_t> seg = {0, 0, 1, 300, 1025, 1025, 4099};  // empty and 1-row segments
  const int64_t n = seg.back(), num_keys = 17;
  const at::Tensor keys = at::randint(0, num_keys, {n}, at::kLong);
  const at::Tensor perm =
      StableCountingSort(keys.to(GetParam().device), Long(seg), num_keys).to(at::kCPU);
  std::vector<int64_t> want(n);
  std::iota(want.begin(), want.end(), 0);
  const int64_t* k = keys.data_ptr<int64_t>();
  for (size_t s = 0; s + 1 < seg.size(); ++s) {
    std::stable_sort(want.begin() + seg[s], want.begin() + seg[s + 1],
                     [k](int64_t a, int64_t b) { return k[a] < k[b]; });
  }
  EXPECT_TRUE(at::equal(perm, at::tensor(want, at::kLong)));
  const at::Tensor inv = InvertPermutation(perm);
  EXPECT_TRUE(at::equal(perm.index_select(0, inv), at::arange(n, at::kLong)));
}

TEST_P(KernelOpTest, RelativeLabelGatherPicksEachPairsLabel) {
  const int64_t rows = 301, heads = 3, labels = 11, period = 7, slots = 21;
  const at::Tensor qa = Random({rows, heads, labels});
  const at::Tensor table = at::randint(-1, labels, {period, slots}, at::kLong);
  const at::Tensor got = RelativeLabelGather(qa, table.to(GetParam().device));
  // Reference: expand the periodic table to every row and gather along the label dim.
  const at::Tensor full = table.repeat({(rows + period - 1) / period, 1}).narrow(0, 0, rows);
  const at::Tensor idx = full.clamp_min(0).unsqueeze(1).expand({rows, heads, slots});
  const at::Tensor qa64 = qa.to(at::kCPU).to(at::kDouble);
  const at::Tensor want =
      at::where((full >= 0).unsqueeze(1), qa64.gather(2, idx), at::zeros({1}, at::kDouble));
  ExpectClose(got, want);
}

TEST_P(KernelOpTest, BadInputsFailWithMessages) {
  if (GetParam().device.is_cuda()) GTEST_SKIP() << "value checks would sync the GPU: CPU only";
  const at::Tensor src = Random({4, 3});
  EXPECT_THROW(GatherRows(src, Long({0, 4})), c10::Error);
  EXPECT_THROW(GatherRows(src, Long({0, -2})), c10::Error);
  EXPECT_THROW(GatherRows(src.reshape({12}), Long({0})), c10::Error);
  EXPECT_THROW(OverlapMerge(src, Long({0, 2, 1}), Long({0, 1})), c10::Error);
  EXPECT_THROW(StableCountingSort(Long({0, 5}), Long({0, 2}), 3), c10::Error);
  EXPECT_THROW(RelativeLabelGather(Random({2, 1, 3}), Long({0, 3}).view({1, 2})), c10::Error);
  try {
    GatherRows(src, Long({7}));
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("gather_rows: index values"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevicesAndDtypes, KernelOpTest, testing::ValuesIn(AllCases()),
                         CaseName);

}  // namespace
}  // namespace longqa::kernels
