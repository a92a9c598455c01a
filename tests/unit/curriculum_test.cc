// The trainer's clock and batches: the curriculum's running accuracy and stage decisions, the
// learning-rate schedule, and token-budget batches that cover every example once per pass.
#include "train/curriculum.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "train/batch_source.h"

namespace longqa {
namespace {

TEST(CurriculumTest, RunningAccuracyCoversTheLastWindowOfExamples) {
  Curriculum c({/*advance_accuracy=*/0.8, /*window=*/10, /*min_stage_steps=*/0, 0});
  EXPECT_EQ(c.running_accuracy(), 0.0);
  c.Record(0, 10);   // a bad early step...
  c.Record(10, 10);  // ...falls out of the window once 10 newer examples are in
  EXPECT_DOUBLE_EQ(c.running_accuracy(), 1.0);
  c.Record(2, 4);
  EXPECT_DOUBLE_EQ(c.running_accuracy(), 12.0 / 14.0);  // the oldest kept step still covers it
}

TEST(CurriculumTest, AStageIsMasteredOnlyAfterMinStepsAndAFullWindow) {
  Curriculum c({0.8, 10, /*min_stage_steps=*/3, /*max_stage_steps=*/0});
  c.Record(5, 5);
  EXPECT_EQ(c.Decide(5, false), Curriculum::Decision::kStay);  // window not full yet
  c.Record(5, 5);
  EXPECT_EQ(c.Decide(2, false), Curriculum::Decision::kStay);  // too few steps
  EXPECT_EQ(c.Decide(3, false), Curriculum::Decision::kMastered);
  EXPECT_EQ(c.Decide(3, true), Curriculum::Decision::kStay);  // the last stage never ends
  c.Reset();
  EXPECT_EQ(c.Decide(3, false), Curriculum::Decision::kStay);
}

TEST(CurriculumTest, AStageEndsAtMaxStepsWhateverItsAccuracy) {
  Curriculum c({0.8, 10, 1, /*max_stage_steps=*/4});
  c.Record(0, 20);
  EXPECT_EQ(c.Decide(3, false), Curriculum::Decision::kStay);
  EXPECT_EQ(c.Decide(4, false), Curriculum::Decision::kTimedOut);
}

TEST(LearningRateTest, WarmUpConstantThenDecayToATenth) {
  EXPECT_DOUBLE_EQ(LearningRate(0, 100, 10, 1.0), 0.1);
  EXPECT_DOUBLE_EQ(LearningRate(9, 100, 10, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(LearningRate(50, 100, 10, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(LearningRate(80, 100, 10, 1.0), 1.0);  // decay starts at the last fifth
  EXPECT_DOUBLE_EQ(LearningRate(90, 100, 10, 1.0), 0.55);
  EXPECT_DOUBLE_EQ(LearningRate(100, 100, 10, 1.0), 0.1);
}

TEST(BatchSourceTest, BatchesKeepTheTokenBudgetAndCoverEveryExampleOncePerPass) {
  std::vector<TrainingExample> examples(7);
  for (size_t i = 0; i < examples.size(); ++i) {
    examples[i].example_id = std::to_string(i);
    examples[i].prepared.document.ids.assign(10 + 10 * i, 0);  // 10..70 tokens
  }
  BatchSource source(&examples, 3, /*batch_tokens=*/80, /*max_batch=*/3);
  std::vector<std::string> order;  // examples in the order batches hold them
  for (int step = 0; step < 40; ++step) {
    const auto batch = source.Next();
    ASSERT_FALSE(batch.empty());
    ASSERT_LE(batch.size(), 3u);
    int64_t tokens = 0;
    for (const TrainingExample* ex : batch) {
      tokens += static_cast<int64_t>(ex->prepared.document.ids.size());
      order.push_back(ex->example_id);
    }
    if (batch.size() > 1) {
      EXPECT_LE(tokens, 80);
    }
  }
  // Every pass of 7 consecutive examples holds each example exactly once.
  for (size_t pass = 0; (pass + 1) * 7 <= order.size(); ++pass) {
    const std::set<std::string> ids(order.begin() + pass * 7, order.begin() + (pass + 1) * 7);
    EXPECT_EQ(ids.size(), 7u) << "pass " << pass;
  }
}

}  // namespace
}  // namespace longqa
