// NQ metrics on a hand-made set, every figure worked out by hand in the comments.
#include "client/nq_eval.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace longqa::cli {
namespace {

TEST(NqEvalTest, HandComputedFigures) {
  // Gold: 4 examples with a long answer (a, b, c, d), 1 without (e). Short: a, b (spans), c (YES).
  const std::vector<NqGold> gold = {
      {"a", {0, 10}, {{2, 4}}, "NONE"},
      {"b", {20, 30}, {{21, 22}, {25, 27}}, "NONE"},
      {"c", {40, 50}, {}, "YES"},
      {"d", {60, 70}, {}, "NONE"},
      {"e", {}, {}, "NONE"},
  };
  const std::vector<NqPrediction> predictions = {
      {"a", {0, 10}, 0.9, {{2, 4}}, 0.9, "NONE"},               // long ✓, short ✓
      {"b", {20, 30}, 0.8, {{25, 27}, {21, 22}}, 0.8, "NONE"},  // long ✓, short ✓ (same set)
      {"c", {40, 50}, 0.3, {}, 0.3, "NO"},                      // long ✓, short ✗ (NO vs YES)
      {"d", {61, 70}, 0.7, {{62, 63}}, 0.7, "NONE"},            // long ✗, short ✗ (gold none)
      {"e", {80, 90}, 0.2, {}, 0.2, "NONE"},                    // long ✗ (gold null)
  };
  const NqScores s = ScoreNq(gold, predictions);
  EXPECT_EQ(s.examples, 5);
  EXPECT_EQ(s.gold_long, 4);
  EXPECT_EQ(s.gold_short, 3);
  // Long, all predictions: 5 non-null, 3 correct; 4 gold. P 3/5, R 3/4, F1 = 2·.6·.75/1.35 = 2/3.
  EXPECT_DOUBLE_EQ(s.long_all.precision, 0.6);
  EXPECT_DOUBLE_EQ(s.long_all.recall, 0.75);
  EXPECT_NEAR(s.long_all.f1, 2.0 / 3.0, 1e-12);
  // Best threshold: score ≥ 0.8 keeps a, b (both correct): P 1, R 1/2, F1 2/3; ≥ 0.3 keeps
  // a, b, d, c: 3 correct of 4, R 3/4, F1 0.75 (the best); ≥ 0.7: a, b, d: P 2/3, R 1/2, F1 4/7.
  EXPECT_DOUBLE_EQ(s.long_best.threshold, 0.3);
  EXPECT_DOUBLE_EQ(s.long_best.precision, 0.75);
  EXPECT_DOUBLE_EQ(s.long_best.recall, 0.75);
  EXPECT_DOUBLE_EQ(s.long_best.f1, 0.75);
  // Short, all: non-null predictions a, b, c, d = 4; correct a, b = 2; gold 3.
  // P 1/2, R 2/3, F1 = 2·(1/2)(2/3)/(7/6) = 4/7.
  EXPECT_DOUBLE_EQ(s.short_all.precision, 0.5);
  EXPECT_NEAR(s.short_all.recall, 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(s.short_all.f1, 4.0 / 7.0, 1e-12);
  // Best: ≥ 0.8 keeps a, b: P 1, R 2/3, F1 0.8.
  EXPECT_DOUBLE_EQ(s.short_best.threshold, 0.8);
  EXPECT_NEAR(s.short_best.f1, 0.8, 1e-12);
}

TEST(NqEvalTest, MissingPredictionsCountAsNull) {
  const std::vector<NqGold> gold = {{"a", {0, 10}, {}, "NONE"}, {"b", {5, 9}, {}, "NONE"}};
  const NqScores s = ScoreNq(gold, {{"a", {0, 10}, 1.0, {}, 0.0, "NONE"}});
  EXPECT_DOUBLE_EQ(s.long_all.precision, 1.0);
  EXPECT_DOUBLE_EQ(s.long_all.recall, 0.5);
  EXPECT_DOUBLE_EQ(s.short_all.f1, 0.0);
}

TEST(NqEvalTest, NullThresholdIsChosenByLongPlusShortF1) {
  // Four answerable examples and two unanswerable ones; the forced answers (what the model says
  // when it must answer) and margins (best_answer_score - no_answer_score) per example.
  const std::vector<NqGold> gold = {
      {"a", {0, 10}, {{2, 4}}, "NONE"},
      {"b", {20, 30}, {{21, 22}}, "NONE"},
      {"c", {40, 50}, {}, "YES"},
      {"d", {60, 70}, {{61, 62}}, "NONE"},
      {"e", {}, {}, "NONE"},
      {"f", {}, {}, "NONE"},
  };
  const std::vector<NqPrediction> forced = {
      {"a", {0, 10}, 1, {{2, 4}}, 1, "NONE"},     // right, margin 3
      {"b", {20, 30}, 1, {{21, 22}}, 1, "NONE"},  // right, margin 2
      {"c", {40, 50}, 1, {}, 1, "YES"},           // right, margin 1
      {"d", {80, 90}, 1, {{81, 82}}, 1, "NONE"},  // wrong paragraph, margin -2
      {"e", {0, 10}, 1, {{2, 4}}, 1, "NONE"},     // unanswerable, margin -1
      {"f", {20, 30}, 1, {{21, 22}}, 1, "NONE"},  // unanswerable, margin 0.5
  };
  const std::vector<double> margins = {3, 2, 1, -2, -1, 0.5};
  // Candidates: -3 (none null), -1.5, -0.25, 0.75, 1.5, 2.5, 4 (all null). Null when margin ≤ t.
  //   t = -3:    6 predicted, 3 right; long P 1/2 R 3/4 F1 .6; short (gold 4) P 1/2 R 3/4 F1 .6
  //   t = -1.5:  d null: 5 predicted, 3 right: P 3/5 R 3/4 F1 2/3 (long and short)
  //   t = -0.25: d, e null: 4 predicted, 3 right: F1 .75 + .75 = 1.5
  //   t = 0.75:  d, e, f null: 3 predicted, 3 right: P 1 R 3/4 F1 6/7 each, sum 1.714 (best)
  //   t = 1.5:   c also null: P 1 R 1/2 F1 2/3 each.
  const NullCalibration c = CalibrateNullThreshold(gold, forced, margins);
  EXPECT_DOUBLE_EQ(c.threshold, 0.75);
  EXPECT_NEAR(c.scores.long_all.f1, 6.0 / 7.0, 1e-12);
  EXPECT_NEAR(c.scores.short_all.f1, 6.0 / 7.0, 1e-12);
  ASSERT_EQ(c.predictions.size(), 6u);
  EXPECT_FALSE(c.predictions[2].long_answer.null());  // c: margin 1 > 0.75, answered
  EXPECT_TRUE(c.predictions[5].long_answer.null());   // f: margin 0.5 ≤ 0.75, null
  EXPECT_TRUE(c.predictions[5].short_answers.empty());
  EXPECT_EQ(c.predictions[5].example_id, "f");

  // Ties go to the threshold closest to 0: one wrong answer, margin 1; the candidates 0 (answer)
  // and 2 (null) both score F1 0 + 0.
  const std::vector<NqGold> one = {{"a", {0, 10}, {}, "YES"}};
  const std::vector<NqPrediction> wrong = {{"a", {20, 30}, 1, {}, 1, "NO"}};
  EXPECT_DOUBLE_EQ(CalibrateNullThreshold(one, wrong, {1.0}).threshold, 0.0);
}

TEST(NqEvalTest, NullThresholdBandsAreChosenEachOnItsOwnDocuments) {
  // Short documents: a right at margin 1, e unanswerable at -1: best threshold 0. Long ones: c
  // right at 5, f unanswerable at 3: best 4. One threshold for all four cannot null both e and f
  // and keep both a and c (its best, 0, answers f: long F1 0.8).
  const std::vector<NqGold> gold = {{"a", {0, 10}, {{2, 4}}, "NONE"},
                                    {"c", {40, 50}, {}, "YES"},
                                    {"e", {}, {}, "NONE"},
                                    {"f", {}, {}, "NONE"}};
  const std::vector<NqPrediction> forced = {{"a", {0, 10}, 1, {{2, 4}}, 1, "NONE"},
                                            {"c", {40, 50}, 1, {}, 1, "YES"},
                                            {"e", {0, 10}, 1, {{2, 4}}, 1, "NONE"},
                                            {"f", {20, 30}, 1, {{21, 22}}, 1, "NONE"}};
  const std::vector<double> margins = {1, 5, -1, 3};
  const std::vector<int64_t> tokens = {4095, 4096, 300, 20000};  // a band starts at its bound
  const NullCalibration one = CalibrateNullThreshold(gold, forced, margins);
  EXPECT_DOUBLE_EQ(one.threshold, 0.0);
  EXPECT_NEAR(one.scores.long_all.f1, 0.8, 1e-12);

  const BandedNullCalibration c =
      CalibrateNullThresholdBands(gold, forced, margins, tokens, {4096});
  ASSERT_EQ(c.bands.size(), 2u);
  EXPECT_DOUBLE_EQ(c.bands[0].threshold, 0.0);
  EXPECT_DOUBLE_EQ(c.bands[1].threshold, 4.0);
  EXPECT_EQ(c.band_examples, (std::vector<int64_t>{2, 2}));
  ASSERT_EQ(c.predictions.size(), 4u);
  EXPECT_FALSE(c.predictions[0].long_answer.null());  // a: 1 > 0
  EXPECT_FALSE(c.predictions[1].long_answer.null());  // c: 5 > 4
  EXPECT_TRUE(c.predictions[2].long_answer.null());   // e: -1 ≤ 0
  EXPECT_TRUE(c.predictions[3].long_answer.null());   // f: 3 ≤ 4
  EXPECT_NEAR(ScoreNq(gold, c.predictions).long_all.f1, 1.0, 1e-12);

  // A band without examples, and bounds that do not increase, are refused.
  EXPECT_THROW(CalibrateNullThresholdBands(gold, forced, margins, tokens, {4096, 30000}),
               std::invalid_argument);
  EXPECT_THROW(CalibrateNullThresholdBands(gold, forced, margins, tokens, {4096, 4096}),
               std::invalid_argument);
  EXPECT_THROW(CalibrateNullThresholdBands(gold, forced, margins, tokens, {0}),
               std::invalid_argument);
}

}  // namespace
}  // namespace longqa::cli
