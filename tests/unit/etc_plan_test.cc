// The ETC encoder's host tables on a request small enough to work out by hand: radius r = 1
// (blocks of 2), relative labels clipped at k = 2 (labels 0..4, part-of 5, not-part-of 6).
#include "model/encoders/etc_plan.h"

#include <gtest/gtest.h>

namespace longqa {
namespace {

ModelConfig SmallEtcConfig(bool hard_mask) {
  ModelConfig c;
  c.architecture = Architecture::kEtc;
  c.etc.radius = 1;
  c.etc.relative_clip = 2;
  c.etc.hard_g2l_mask = hard_mask;
  return c;
}

// Question piece 7; document tokens 10..14, the first three in paragraph 0, the rest in 1.
EtcInput SmallInput(const ModelConfig& c) {
  return MakeEtcInput(c, {7}, {10, 11, 12, 13, 14}, {0, 0, 0, 1, 1}, 2);
}

TEST(EtcPlanTest, InputHasClsQuestionAndOneSegmentTokenPerParagraph) {
  const ModelConfig c = SmallEtcConfig(false);
  const EtcInput in = SmallInput(c);
  EXPECT_EQ(in.global_ids,
            (std::vector<int32_t>{c.special.cls, 7, c.special.paragraph, c.special.paragraph}));
  EXPECT_EQ(in.global_paragraph, (std::vector<int64_t>{-1, -1, 0, 1}));
  EXPECT_EQ(in.long_ids, (std::vector<int32_t>{10, 11, 12, 13, 14}));
  EXPECT_TRUE(in.long_match.empty());
}

TEST(EtcPlanTest, BlocksNeighboursAndLocalLabels) {
  const EtcRequestPlan p = PlanEtcRequest(SmallEtcConfig(false), SmallInput(SmallEtcConfig(false)));
  EXPECT_EQ(p.n_g, 4);
  EXPECT_EQ(p.n_l, 5);
  EXPECT_EQ(p.block, 2);
  EXPECT_EQ(p.num_blocks, 3);
  // Each block's key slots are the previous, its own and the next block; outside rows are -1.
  const std::vector<int64_t> first(p.block_index.begin(), p.block_index.begin() + 6);
  const std::vector<int64_t> last(p.block_index.begin() + 12, p.block_index.end());
  EXPECT_EQ(first, (std::vector<int64_t>{-1, -1, 0, 1, 2, 3}));
  EXPECT_EQ(last, (std::vector<int64_t>{2, 3, 4, -1, -1, -1}));
  // Query 0 of a block sits at slot 2: it sees slots 1..3 (relative -1, 0, +1 → labels 1, 2, 3).
  const std::vector<int64_t> q0(p.local_labels.begin(), p.local_labels.begin() + 6);
  EXPECT_EQ(q0, (std::vector<int64_t>{-1, 1, 2, 3, -1, -1}));
  // In block 0, slot 1 is before the document: masked although within the radius.
  const std::vector<int64_t> valid_b0_q0(p.local_valid.begin(), p.local_valid.begin() + 6);
  EXPECT_EQ(valid_b0_q0, (std::vector<int64_t>{0, 0, 1, 1, 0, 0}));
}

TEST(EtcPlanTest, SegmentTokensLinkToTheirOwnParagraph) {
  const ModelConfig c = SmallEtcConfig(false);
  const EtcRequestPlan p = PlanEtcRequest(c, SmallInput(c));
  const int64_t part_of = EtcPartOfLabel(c), not_part_of = EtcNotPartOfLabel(c);
  ASSERT_EQ(part_of, 5);
  // l2g: long token 3 (paragraph 1) is part of segment token 3, not of segment token 2 or CLS.
  EXPECT_EQ(p.l2g_labels[3 * p.n_g + 3], part_of);
  EXPECT_EQ(p.l2g_labels[3 * p.n_g + 2], not_part_of);
  EXPECT_EQ(p.l2g_labels[3 * p.n_g + 0], not_part_of);
  // g2g: clipped relative positions from CLS; g2l from segment token 2 (paragraph 0).
  const int64_t keys = p.n_g + p.n_l;
  const std::vector<int64_t> cls_g2g(p.global_labels.begin(), p.global_labels.begin() + 4);
  EXPECT_EQ(cls_g2g, (std::vector<int64_t>{2, 3, 4, 4}));
  const std::vector<int64_t> seg_g2l(p.global_labels.begin() + 2 * keys + 4,
                                     p.global_labels.begin() + 3 * keys);
  EXPECT_EQ(seg_g2l, (std::vector<int64_t>{5, 5, 5, 6, 6}));
  for (int64_t v : p.global_valid) EXPECT_EQ(v, 1);
}

TEST(EtcPlanTest, HardMaskHidesOtherParagraphsFromSegmentTokensOnly) {
  const ModelConfig c = SmallEtcConfig(true);
  const EtcRequestPlan p = PlanEtcRequest(c, SmallInput(c));
  const int64_t keys = p.n_g + p.n_l;
  const std::vector<int64_t> seg2(p.global_valid.begin() + 2 * keys + 4,
                                  p.global_valid.begin() + 3 * keys);
  EXPECT_EQ(seg2, (std::vector<int64_t>{1, 1, 1, 0, 0}));
  const std::vector<int64_t> cls(p.global_valid.begin(), p.global_valid.begin() + keys);
  EXPECT_EQ(cls, std::vector<int64_t>(keys, 1));
}

}  // namespace
}  // namespace longqa
