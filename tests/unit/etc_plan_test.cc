// The ETC encoder's host input and tables on a request small enough to work out by hand: radius r =
// 1 (blocks of 2), relative labels clipped at k = 2 (labels 0..4, part-of 5, not-part-of 6).
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
  EXPECT_EQ(in.global_segment, (std::vector<int64_t>{-1, -1, 0, 1}));
  EXPECT_EQ(in.long_segment, (std::vector<int64_t>{0, 0, 0, 1, 1}));
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
}

TEST(EtcPlanTest, GlobalLabelsAreClippedRelativePositions) {
  const ModelConfig c = SmallEtcConfig(false);
  const EtcRequestPlan p = PlanEtcRequest(c, SmallInput(c));
  // From CLS (global 0): 0, +1, +2, +3 clipped at k = 2 → labels 2, 3, 4, 4.
  const std::vector<int64_t> cls(p.g2g_labels.begin(), p.g2g_labels.begin() + 4);
  EXPECT_EQ(cls, (std::vector<int64_t>{2, 3, 4, 4}));
  const std::vector<int64_t> last(p.g2g_labels.begin() + 12, p.g2g_labels.end());
  EXPECT_EQ(last, (std::vector<int64_t>{0, 0, 1, 2}));
}

TEST(EtcPlanTest, FewParagraphsKeepOneSegmentEach) {
  int64_t segments = 0;
  EXPECT_EQ(SegmentOfParagraphs({0, 0, 1, 2, 2}, 3, 3, &segments), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(segments, 3);
}

TEST(EtcPlanTest, ManyParagraphsMergeIntoContiguousSegmentsOfAboutEqualTokens) {
  // 40 tokens in 10 paragraphs of 4; at most 4 segments: paragraph p starts at 4p, segment
  // floor(4p · 4 / 40) → 0,0,0,1,1,2,2,2,3,3.
  std::vector<int64_t> token_paragraph;
  for (int64_t p = 0; p < 10; ++p) token_paragraph.insert(token_paragraph.end(), 4, p);
  int64_t segments = 0;
  EXPECT_EQ(SegmentOfParagraphs(token_paragraph, 10, 4, &segments),
            (std::vector<int64_t>{0, 0, 0, 1, 1, 2, 2, 2, 3, 3}));
  EXPECT_EQ(segments, 4);
  // One long paragraph then many one-token ones: numbering stays dense and within the cap.
  token_paragraph.assign(30, 0);
  for (int64_t p = 1; p <= 20; ++p) token_paragraph.push_back(p);
  const std::vector<int64_t> merged = SegmentOfParagraphs(token_paragraph, 21, 5, &segments);
  EXPECT_LE(segments, 5);
  EXPECT_EQ(merged.front(), 0);
  EXPECT_EQ(merged.back(), segments - 1);
  for (size_t p = 1; p < merged.size(); ++p) {
    EXPECT_TRUE(merged[p] == merged[p - 1] || merged[p] == merged[p - 1] + 1) << p;
  }
}

TEST(EtcPlanTest, MergedInputHasOneTokenPerSegment) {
  ModelConfig c = SmallEtcConfig(false);
  c.etc.max_segments = 1;
  const EtcInput in = MakeEtcInput(c, {7}, {10, 11, 12, 13, 14}, {0, 0, 0, 1, 1}, 2);
  EXPECT_EQ(in.global_ids, (std::vector<int32_t>{c.special.cls, 7, c.special.paragraph}));
  EXPECT_EQ(in.long_segment, (std::vector<int64_t>{0, 0, 0, 0, 0}));
}

TEST(EtcPlanTest, ParagraphPositionsRestartAtEachParagraphAndClip) {
  ModelConfig c = SmallEtcConfig(false);
  c.etc.positions = "paragraph";
  c.position_offset = 2;
  c.max_position_embeddings = 4;  // offsets 0..1 fit; longer paragraphs clip at row 3
  const EtcInput in = MakeEtcInput(c, {7, 8}, {10, 11, 12, 13, 14}, {0, 0, 0, 1, 1}, 2);
  EXPECT_EQ(in.global_positions, (std::vector<int64_t>{2, 3, 4, 2, 2}));
  EXPECT_EQ(in.long_positions, (std::vector<int64_t>{2, 3, 3, 2, 3}));
  EXPECT_TRUE(SmallInput(SmallEtcConfig(false)).long_positions.empty());
}

TEST(EtcPlanTest, DocumentPositionsRunOnAfterTheQuestionAndWrap) {
  ModelConfig c = SmallEtcConfig(false);
  c.etc.positions = "document";
  c.position_offset = 2;
  c.max_position_embeddings = 8;  // rows 2..7: six positions, then the numbering wraps
  const EtcInput in = MakeEtcInput(c, {7, 8}, {10, 11, 12, 13, 14}, {0, 0, 0, 1, 1}, 2);
  EXPECT_EQ(in.global_positions, (std::vector<int64_t>{2, 3, 4, 2, 2}));
  // CLS, two question pieces and SEP take 0..3: the document starts at 4 (row 6), wraps after 5.
  EXPECT_EQ(in.long_positions, (std::vector<int64_t>{6, 7, 2, 3, 4}));
}

// A document of paragraphs of words (each a run of pieces sharing one word span), each paragraph
// opened by the paragraph token (an empty span).
struct WordDocument {
  std::vector<int32_t> ids;
  std::vector<int64_t> paragraph;
  std::vector<std::pair<int64_t, int64_t>> spans;
};

WordDocument MakeWordDocument(const std::vector<std::vector<std::vector<int32_t>>>& paragraphs) {
  WordDocument d;
  int64_t byte = 0;
  for (size_t p = 0; p < paragraphs.size(); ++p) {
    d.ids.push_back(3);
    d.paragraph.push_back(static_cast<int64_t>(p));
    d.spans.emplace_back(byte, byte);
    for (const std::vector<int32_t>& word : paragraphs[p]) {
      for (int32_t id : word) {
        d.ids.push_back(id);
        d.paragraph.push_back(static_cast<int64_t>(p));
        d.spans.emplace_back(byte, byte + 4);
      }
      byte += 5;
    }
  }
  return d;
}

// Words A (20 21) in paragraphs 0, 1, 2; C (40 41) in 0 and 2; D (50 51 52) in 1 and 3; E (60 61)
// twice but only in 2; the one-piece word 30 in 0 and 3; 20 and 21 as two words in 3.
WordDocument EntityDocument() {
  return MakeWordDocument({{{20, 21}, {30}, {40, 41}},
                           {{20, 21}, {50, 51, 52}},
                           {{40, 41}, {20, 21}, {60, 61}, {60, 61}},
                           {{30}, {20}, {21}, {50, 51, 52}}});
}

TEST(EtcPlanTest, EntitiesAreWordsOfSeveralPiecesInSeveralParagraphs) {
  const WordDocument d = EntityDocument();
  std::vector<int32_t> first;
  const std::vector<int64_t> entity = EntityOfTokens(d.ids, d.paragraph, d.spans, {}, 8, &first);
  // Numbered by first mention: A 0, C 1, D 2; E, 30 and the split 20 / 21 are none.
  EXPECT_EQ(first, (std::vector<int32_t>{20, 40, 50}));
  EXPECT_EQ(entity, (std::vector<int64_t>{-1, 0, 0, -1, 1,  1,  -1, 0,  0,  2,  2,  2, -1, 1,
                                          1,  0, 0, -1, -1, -1, -1, -1, -1, -1, -1, 2, 2,  2}));
  // At most two: the two in two paragraphs (C, D) before A in three, still by first mention (the
  // question's pieces name no word here).
  const std::vector<int64_t> two = EntityOfTokens(d.ids, d.paragraph, d.spans, {7, 8}, 2, &first);
  EXPECT_EQ(first, (std::vector<int32_t>{40, 50}));
  EXPECT_EQ(two[4], 0);
  EXPECT_EQ(two[9], 1);
  EXPECT_EQ(two[1], -1);
  // A question that names D (its pieces among the question's): the entities that share a
  // paragraph with D (paragraphs 1 and 3: A and D) come first, C (0 and 2) after them.
  const std::vector<int64_t> near =
      EntityOfTokens(d.ids, d.paragraph, d.spans, {7, 50, 51, 52, 9}, 2, &first);
  EXPECT_EQ(first, (std::vector<int32_t>{20, 50}));
  EXPECT_EQ(near[1], 0);
  EXPECT_EQ(near[9], 1);
  EXPECT_EQ(near[4], -1);
  // A question with D's first two pieces only names no word of the document.
  EntityOfTokens(d.ids, d.paragraph, d.spans, {50, 51}, 2, &first);
  EXPECT_EQ(first, (std::vector<int32_t>{40, 50}));
  // Without word spans (a tokenizer that gives no words) there are none.
  EXPECT_EQ(EntityOfTokens(d.ids, d.paragraph, {}, {}, 8, &first),
            std::vector<int64_t>(d.ids.size(), -1));
  EXPECT_TRUE(first.empty());
}

TEST(EtcPlanTest, EntityTokensFollowTheSegmentTokensAndLinkTheirMentions) {
  ModelConfig c = SmallEtcConfig(false);
  c.etc.positions = "paragraph";
  c.position_offset = 2;
  const WordDocument d = EntityDocument();
  EXPECT_TRUE(MakeEtcInput(c, {7}, d.ids, d.paragraph, 4, d.spans).long_entity.empty());
  c.etc.entity_globals = 2;
  const EtcInput in = MakeEtcInput(c, {7}, d.ids, d.paragraph, 4, d.spans);
  // CLS, the question piece, four segment tokens, then C and D as their first pieces.
  EXPECT_EQ(in.global_ids,
            (std::vector<int32_t>{c.special.cls, 7, c.special.paragraph, c.special.paragraph,
                                  c.special.paragraph, c.special.paragraph, 40, 50}));
  EXPECT_EQ(in.global_segment, (std::vector<int64_t>{-1, -1, 0, 1, 2, 3, -1, -1}));
  EXPECT_EQ(in.global_positions, (std::vector<int64_t>{2, 3, 2, 2, 2, 2, 2, 2}));
  ASSERT_EQ(in.long_entity.size(), d.ids.size());
  for (size_t t = 0; t < d.ids.size(); ++t) {
    const int32_t id = d.ids[t];
    const bool c_or_d = id == 40 || id == 41 || id == 50 || id == 51 || id == 52;
    EXPECT_EQ(in.long_entity[t], !c_or_d ? -1 : id < 50 ? 6 : 7) << "token " << t;
  }
}

}  // namespace
}  // namespace longqa
