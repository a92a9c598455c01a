// The trainer's memory bank: with a per-pass sample it spans many passes (the last capacity /
// rows_per_pass), each kept row a row of its own pass drawn at random, reproducible by seed;
// without one it holds whole passes, so one long document fills it (the old behaviour).
#include "train/cluster_memory.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tests/unit/test_model.h"

namespace longqa {
namespace {

using testing_support::TinyConfig;

constexpr int64_t kClusterLayer = 1;  // "SCS"
constexpr int64_t kRowsPerPass = 50;

// Pass p's rows: column 0 holds p, column 1 the row's index in its pass.
at::Tensor PassRows(int64_t pass, int64_t rows, int64_t d) {
  at::Tensor t = at::zeros({rows, d});
  t.select(1, 0).fill_(static_cast<double>(pass));
  t.select(1, 1).copy_(at::arange(rows, at::kFloat));
  return t;
}

TEST(ClusterMemoryTest, SampledPassesSpanTheLastCapacityOverRowsPerPassPasses) {
  const ModelConfig c = TinyConfig("SCS", 16, 12, 2);
  ClusterMemory memory(c, /*capacity=*/400, kRowsPerPass, /*seed=*/3);
  for (int64_t pass = 0; pass < 30; ++pass) memory.Observe(kClusterLayer, PassRows(pass, 600, 8));
  const at::Tensor rows = memory.Rows(kClusterLayer);
  ASSERT_EQ(rows.size(0), 400);
  EXPECT_EQ(memory.min_rows(), 400);
  // The last 8 passes (22..29), 50 distinct rows of each, drawn from all of the pass's 600.
  std::map<int64_t, std::set<int64_t>> kept;
  for (int64_t i = 0; i < rows.size(0); ++i) {
    kept[rows[i][0].item<int64_t>()].insert(rows[i][1].item<int64_t>());
  }
  ASSERT_EQ(kept.size(), 8u);
  EXPECT_EQ(kept.begin()->first, 22);
  for (const auto& [pass, indices] : kept) {
    EXPECT_EQ(indices.size(), static_cast<size_t>(kRowsPerPass)) << pass;
    EXPECT_GE(*indices.rbegin(), 300) << "pass " << pass << " kept only its first rows";
  }
  // Passes are sampled independently: not the same indices every time.
  EXPECT_NE(kept[22], kept[29]);
}

TEST(ClusterMemoryTest, SameSeedSameSampleAndAPassSmallerThanTheSampleIsKeptWhole) {
  const ModelConfig c = TinyConfig("SCS", 16, 12, 2);
  ClusterMemory a(c, 1000, kRowsPerPass, 9), b(c, 1000, kRowsPerPass, 9),
      other(c, 1000, kRowsPerPass, 10);
  for (int64_t pass = 0; pass < 3; ++pass) {
    for (ClusterMemory* m : {&a, &b, &other}) m->Observe(kClusterLayer, PassRows(pass, 200, 4));
  }
  EXPECT_TRUE(at::equal(a.Rows(kClusterLayer), b.Rows(kClusterLayer)));
  EXPECT_FALSE(at::equal(a.Rows(kClusterLayer), other.Rows(kClusterLayer)));
  a.Observe(kClusterLayer, PassRows(3, 20, 4));
  EXPECT_TRUE(at::equal(a.Rows(kClusterLayer).narrow(0, 150, 20), PassRows(3, 20, 4)));
  // Layers without a bank ignore what they are shown.
  a.Observe(0, PassRows(4, 20, 4));
  EXPECT_EQ(a.Rows(0).numel(), 0);
  EXPECT_EQ(a.min_rows(), 170);
}

TEST(ClusterMemoryTest, WithoutASampleOneLongPassFillsTheBank) {
  const ModelConfig c = TinyConfig("SCS", 16, 12, 2);
  ClusterMemory memory(c, 400, /*rows_per_pass=*/0);
  for (int64_t pass = 0; pass < 30; ++pass) memory.Observe(kClusterLayer, PassRows(pass, 600, 8));
  const at::Tensor rows = memory.Rows(kClusterLayer);
  ASSERT_EQ(rows.size(0), 400);
  EXPECT_TRUE(at::equal(rows, PassRows(29, 600, 8).narrow(0, 200, 400)));
}

}  // namespace
}  // namespace longqa
