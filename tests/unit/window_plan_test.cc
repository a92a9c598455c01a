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

TEST(WindowPlanTest, SquadWindowsCloseWithTheirOwnSepAndTypeTheirContext) {
  WindowInput in = Input(4, 37);
  in.end_token = 2;
  in.context_type = 1;
  const WindowPlan plan = PlanWindows({in}, 10, 4, 1);
  ASSERT_EQ(plan.num_windows, 8);
  EXPECT_EQ(plan.window_len, 4 + 10 + 1);
  EXPECT_EQ(plan.num_rows, 8 * (4 + 1) + 37);  // each window's question and end copies
  const int64_t t_len = plan.window_len;
  for (int64_t w = 0; w < plan.num_windows; ++w) {
    const int64_t begin = plan.window_context_begin[w], end = plan.window_context_end[w];
    EXPECT_EQ(begin, 4 * w);
    EXPECT_EQ(end, std::min<int64_t>(4 * w + 10, 37));
    for (int64_t t = 0; t < 4; ++t) EXPECT_EQ(plan.slot_types[w * t_len + t], 0);
    for (int64_t j = begin; j < end; ++j) {
      const int64_t slot = w * t_len + 4 + (j - begin);
      EXPECT_EQ(plan.slot_tokens[slot], in.context[j]);
      EXPECT_EQ(plan.slot_types[slot], 1);
    }
    const int64_t close = w * t_len + 4 + (end - begin);
    EXPECT_EQ(plan.slot_tokens[close], 2);
    EXPECT_EQ(plan.slot_positions[close], 4 + (end - begin));
    EXPECT_EQ(plan.slot_types[close], 1);
  }
  // Every row has one owner slot, holding that row, in the window that owns its token.
  std::vector<int64_t> owners = plan.row_owner_slot;
  for (int64_t r = 0; r < plan.num_rows; ++r) {
    ASSERT_GE(owners[r], 0) << r;
    EXPECT_EQ(plan.window_index[owners[r]], r);
  }
  std::sort(owners.begin(), owners.end());
  EXPECT_EQ(std::unique(owners.begin(), owners.end()), owners.end());
  for (int64_t j = 0; j < 37; ++j) {
    EXPECT_EQ(plan.row_owner_slot[plan.context_rows[j]] / t_len, std::min<int64_t>(j / 4, 7)) << j;
  }
}

}  // namespace
}  // namespace longqa
