// The Cluster-Former window plan's host tables: rows, windows, overlap merging and chunks.
#include "model/encoders/window_plan.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace longqa {
namespace {

// A request with a question of q ids (CLS and SEP included) and x context ids.
WindowInput Input(int64_t q, int64_t x) {
  WindowInput in;
  for (int64_t i = 0; i < q; ++i) in.question.push_back(static_cast<int32_t>(10 + i));
  for (int64_t i = 0; i < x; ++i)
    in.context.push_back(static_cast<int32_t>(i % 17 == 0 ? 4 : 30 + i));
  return in;
}

TEST(WindowPlanTest, EveryContextTokenHasOneRowAndEveryCopyMerges) {
  const std::vector<WindowInput> inputs = {Input(4, 37), Input(6, 5)};
  const WindowPlan plan = PlanWindows(inputs, 10, 4, 1);
  EXPECT_EQ(plan.num_windows, NumWindows(37, 10, 4) + 1);
  EXPECT_EQ(NumWindows(37, 10, 4), 8);  // 1 + ceil(27 / 4)
  EXPECT_EQ(plan.num_rows, 8 * 4 + 37 + 1 * 6 + 5);
  std::vector<int64_t> rows = plan.context_rows;
  std::sort(rows.begin(), rows.end());
  EXPECT_EQ(std::unique(rows.begin(), rows.end()), rows.end());
  // A context token in the middle sits in ceil(l / m) = 3 windows; the CSR averages all copies.
  const int64_t row = plan.context_rows[20];
  EXPECT_EQ(plan.merge_offsets[row + 1] - plan.merge_offsets[row], 3);
  const ChunkPlan chunks = PlanChunks(plan.rows_begin, 4);
  EXPECT_EQ(chunks.num_chunks, (8 * 4 + 37 + 3) / 4 + (6 + 5 + 3) / 4);
}

}  // namespace
}  // namespace longqa
