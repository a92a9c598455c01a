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
  // ids 1 and 2 tie exactly: scaling by a power of two leaves the normalised centroid the same
  // bits whatever order the norm sums in (a factor of 5 tied on one CPU and not on another).
  const at::Tensor centroids = at::cat({-row, row * 2.0, row * 4.0});
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

// The ETC score-bias ops write into a column slice of a wider score buffer: the reference is the
// fp64 formula over the slice, and the columns around it must stay as they were.
class EtcScoreBiasTest : public KernelOpTest {
 protected:
  static constexpr int64_t kHeads = 3, kRows = 29, kCols = 13, kLabels = 7, kFirstCol = 5;
  void SetUp() override {
    KernelOpTest::SetUp();
    buffer_ = Random({kHeads, kRows, 24}) * 0.5;
    before_ = buffer_.to(at::kCPU).to(at::kDouble).clone();  // .to() of a CPU double is no copy
    qa_ = Random({kHeads, kRows, kLabels}) * 0.5;
  }
  at::Tensor Slice() const { return buffer_.narrow(2, kFirstCol, kCols); }
  // Compares the slice with `want` (fp64, masked pairs as -1e30) and the rest with before_.
  void ExpectSlice(const at::Tensor& want) const {
    const at::Tensor got = Slice().to(at::kCPU).to(at::kDouble);
    const at::Tensor masked = want.le(-1e29);
    // Reduced precision turns -1e30 into a large negative or -inf: any of those masks.
    EXPECT_TRUE(got.masked_select(masked).le(-1e4).all().item<bool>());
    ExpectClose(got.masked_fill(masked, 0), want.masked_fill(masked, 0));
    const at::Tensor rest = buffer_.to(at::kCPU).to(at::kDouble);
    EXPECT_TRUE(at::equal(rest.narrow(2, 0, kFirstCol), before_.narrow(2, 0, kFirstCol)));
    EXPECT_TRUE(at::equal(rest.narrow(2, kFirstCol + kCols, 24 - kFirstCol - kCols),
                          before_.narrow(2, kFirstCol + kCols, 24 - kFirstCol - kCols)));
  }
  at::Tensor buffer_, before_, qa_;
};

TEST_P(EtcScoreBiasTest, LabelBiasAddsEachPairsLabelScoreAndMasksClosedPairs) {
  const int64_t period = 4, row0 = 6, slot_table_rows = (row0 + kRows - 1) / period + 1;
  const at::Tensor labels = at::randint(-1, kLabels, {period, kCols}, at::kLong);
  const at::Tensor slot_rows = at::randint(-1, 3, {slot_table_rows * kCols}, at::kLong);
  // Reference: every query row's label row and slot row written out, then one gather.
  const at::Tensor query = at::arange(row0, row0 + kRows, at::kLong);
  const at::Tensor label = labels.index_select(0, query.remainder(period));  // [R, C]
  const at::Tensor slot =
      slot_rows.view({slot_table_rows, kCols}).index_select(0, query.div(period, "floor"));
  // On the CPU both launchers: the row form it runs and the per-element core CUDA runs.
  const bool cpu = GetParam().device == at::kCPU;
  for (const bool by_element : cpu ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
    const auto op = by_element ? EtcLabelBiasByElement : EtcLabelBias;
    for (const bool with_slots : {true, false}) {
      SCOPED_TRACE(std::string(with_slots ? "slot table" : "no slot table") +
                   (by_element ? ", by element" : ""));
      SetUp();
      op(Slice(), qa_, labels.to(GetParam().device), row0,
         with_slots ? slot_rows.to(GetParam().device) : at::Tensor());
      // Without a slot table only the labels close pairs.
      const at::Tensor open = with_slots ? label.ge(0).logical_and(slot.ge(0)) : label.ge(0);
      const at::Tensor qa = qa_.to(at::kCPU).to(at::kDouble);
      const at::Tensor gathered =
          qa.gather(2, label.clamp_min(0).unsqueeze(0).expand({kHeads, kRows, kCols}));
      const at::Tensor base = before_.narrow(2, kFirstCol, kCols);
      ExpectSlice(at::where(open.unsqueeze(0), base + gathered, at::full({1}, -1e30, at::kDouble)));
    }
  }
}

TEST_P(EtcScoreBiasTest, MembershipBiasIsPartOfInsideTheRowsRangeAndNotPartOfElsewhere) {
  const int64_t part_of = 5, not_part_of = 6, col0 = 10;
  // Ranges inside, across and outside the slice's keys [10, 23); some rows have none.
  std::vector<int64_t> lo(kRows), hi(kRows);
  for (int64_t r = 0; r < kRows; ++r) {
    lo[r] = r % 5 == 0 ? -1 : 4 + (r * 7) % 19;
    hi[r] = lo[r] < 0 ? -1 : lo[r] + 1 + r % 6;
  }
  // On the CPU both launchers: the row form it runs and the per-element core CUDA runs.
  const bool cpu = GetParam().device == at::kCPU;
  for (const bool by_element : cpu ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
    for (const bool mask_outside : {false, true}) {
      SCOPED_TRACE(std::string(mask_outside ? "mask outside" : "no mask") +
                   (by_element ? ", by element" : ""));
      SetUp();
      const auto op = by_element ? EtcMembershipBiasByElement : EtcMembershipBias;
      op(Slice(), qa_, part_of, not_part_of, Long(lo), Long(hi), col0, mask_outside);
      const at::Tensor key = at::arange(col0, col0 + kCols, at::kLong).unsqueeze(0);  // [1, C]
      const at::Tensor lo_t = at::tensor(lo, at::kLong).unsqueeze(1),
                       hi_t = at::tensor(hi, at::kLong).unsqueeze(1);
      const at::Tensor has = lo_t.ge(0);
      const at::Tensor inside = has.logical_and(key.ge(lo_t)).logical_and(key.lt(hi_t));  // [R, C]
      const at::Tensor qa = qa_.to(at::kCPU).to(at::kDouble);
      const at::Tensor bias = at::where(inside.unsqueeze(0), qa.select(2, part_of).unsqueeze(2),
                                        qa.select(2, not_part_of).unsqueeze(2));
      at::Tensor want = before_.narrow(2, kFirstCol, kCols) + bias;
      if (mask_outside) {
        want = want.masked_fill(has.logical_and(inside.logical_not()).unsqueeze(0), -1e30);
      }
      ExpectSlice(want);
    }
  }
}

TEST_P(KernelOpTest, ScoreArgmaxIsTheRowArgmax) {
  const at::Tensor scores = Random({513, 19});
  const at::Tensor got = ScoreArgmax(scores).to(at::kCPU);
  const at::Tensor s64 = scores.to(at::kCPU).to(at::kDouble);
  // Reduced precision rounds the inputs, not the comparison: ties there go to the lowest column,
  // as at::argmax's first maximum does.
  EXPECT_TRUE(at::equal(got, s64.argmax(1)));
  EXPECT_EQ(ScoreArgmax(Long({3, 7, 7}).view({1, 3}).to(GetParam().dtype)).item<int64_t>(), 1);
}

// Plain-loop references for the Hamming K-Means steps.
int64_t Popcount(int64_t x) { return __builtin_popcountll(static_cast<unsigned long long>(x)); }

TEST_P(KernelOpTest, HammingAssignPicksTheNearestCodeLowestIdOnTies) {
  const int64_t groups = 3, n = 501, c = 13;
  const at::Tensor codes = at::randint(0, int64_t{1} << 62, {groups, n}, at::kLong);
  at::Tensor centroids = at::randint(0, int64_t{1} << 62, {groups, c}, at::kLong);
  centroids[1][5] = centroids[1][2];  // a duplicate centroid: id 2 must win
  const at::Tensor got =
      HammingAssign(codes.to(GetParam().device), centroids.to(GetParam().device)).to(at::kCPU);
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t i = 0; i < n; ++i) {
      int64_t best = 0;
      for (int64_t j = 1; j < c; ++j) {
        const int64_t x = codes[g][i].item<int64_t>();
        if (Popcount(x ^ centroids[g][j].item<int64_t>()) <
            Popcount(x ^ centroids[g][best].item<int64_t>())) {
          best = j;
        }
      }
      ASSERT_EQ(got[g][i].item<int64_t>(), best) << "group " << g << " query " << i;
    }
  }
}

TEST_P(KernelOpTest, HammingMajorityTakesEachBitsMajorityAndKeepsTies) {
  const int64_t groups = 2, n = 40, c = 5, bits = 11;
  const at::Tensor codes = at::randint(0, int64_t{1} << bits, {groups, n}, at::kLong);
  at::Tensor ids = at::randint(0, c, {groups, n}, at::kLong);
  ids[1].fill_(0);  // group 1: clusters 1-4 empty, their codes must stay
  const at::Tensor old = at::randint(0, int64_t{1} << bits, {groups, c}, at::kLong);
  // order: flat indices sorted by cluster g * c + j; offsets: where each cluster starts.
  std::vector<int64_t> order, offsets = {0};
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t j = 0; j < c; ++j) {
      for (int64_t i = 0; i < n; ++i) {
        if (ids[g][i].item<int64_t>() == j) order.push_back(g * n + i);
      }
      offsets.push_back(static_cast<int64_t>(order.size()));
    }
  }
  const at::Tensor got = HammingMajority(codes.to(GetParam().device), Long(order), Long(offsets),
                                         old.to(GetParam().device), bits)
                             .to(at::kCPU);
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t j = 0; j < c; ++j) {
      int64_t want = 0;
      for (int64_t b = 0; b < bits; ++b) {
        int64_t ones = 0, members = 0;
        for (int64_t i = 0; i < n; ++i) {
          if (ids[g][i].item<int64_t>() != j) continue;
          ++members;
          ones += (codes[g][i].item<int64_t>() >> b) & 1;
        }
        const int64_t bit = 2 * ones > members   ? 1
                            : 2 * ones < members ? 0
                                                 : (old[g][j].item<int64_t>() >> b) & 1;
        want |= bit << b;
      }
      EXPECT_EQ(got[g][j].item<int64_t>(), want) << "group " << g << " cluster " << j;
    }
  }
}

TEST_P(KernelOpTest, SparseDotAndWeightedSumMatchGatheredDenseProducts) {
  const int64_t groups = 3, n = 77, m = 51, s = 9, d = 16, dv = 21;
  const at::Tensor q = Random({groups, n, d}) * 0.25, k = Random({groups, m, d}) * 0.25;
  const at::Tensor v = Random({groups, m, dv}) * 0.25, w = Random({groups, n, s}) * 0.25;
  const at::Tensor index = at::randint(0, m, {groups, n, s}, at::kLong);
  const at::Tensor dev_index = index.to(GetParam().device);
  const at::Tensor q64 = q.to(at::kCPU).to(at::kDouble), k64 = k.to(at::kCPU).to(at::kDouble);
  const at::Tensor v64 = v.to(at::kCPU).to(at::kDouble), w64 = w.to(at::kCPU).to(at::kDouble);
  // Reference: gather each query's keys / values, then dense products.
  auto listed = [&](const at::Tensor& rows) {  // [G, M, e] → [G, N, S, e]
    return at::stack({rows[0].index_select(0, index[0].reshape({-1})),
                      rows[1].index_select(0, index[1].reshape({-1})),
                      rows[2].index_select(0, index[2].reshape({-1}))})
        .view({groups, n, s, rows.size(2)});
  };
  ExpectClose(SparseDotProduct(q, k, dev_index), (q64.unsqueeze(2) * listed(k64)).sum(-1));
  ExpectClose(SparseWeightedSum(w, v, dev_index), (w64.unsqueeze(-1) * listed(v64)).sum(2));
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
  EXPECT_THROW(HammingAssign(Long({1, 2}).view({1, 2}), Long({1}).view({1, 1}).repeat({2, 1})),
               c10::Error);
  EXPECT_THROW(SparseDotProduct(Random({1, 2, 3}), Random({1, 4, 3}), Long({0, 4}).view({1, 2, 1})),
               c10::Error);
  EXPECT_THROW(
      SparseWeightedSum(Random({1, 2, 1}), Random({2, 4, 3}), Long({0, 1}).view({1, 2, 1})),
      c10::Error);
  EXPECT_THROW(EtcLabelBias(Random({1, 2, 3}), Random({1, 2, 4}), Long({0, 4, 1}).view({1, 3}), 0,
                            at::Tensor()),
               c10::Error);  // label 4 of 4
  EXPECT_THROW(EtcLabelBiasByElement(Random({1, 2, 3}), Random({1, 2, 4}),
                                     Long({0, -2, 1}).view({1, 3}), 0, at::Tensor()),
               c10::Error);  // label -2
  EXPECT_THROW(
      EtcMembershipBias(Random({1, 2, 3}), Random({1, 2, 4}), 1, 2, Long({0}), Long({1}), 0, false),
      c10::Error);  // one range for two rows
  try {
    GatherRows(src, Long({7}));
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("gather_rows: index values"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevicesAndDtypes, KernelOpTest, testing::ValuesIn(AllCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(AllDevicesAndDtypes, EtcScoreBiasTest, testing::ValuesIn(AllCases()),
                         CaseName);

}  // namespace
}  // namespace longqa::kernels
