// The host side of the ETC encoder (etc_encoder.h): a request's global and long inputs and the
// small tables its blocked l2l attention reads, built as plain vectors without tensors (as
// window_plan.h does for Cluster-Former) so they are checked directly (tests/unit/etc_plan_test).
// The relative labels follow ETC §3 and appendix A (docs/references.md): clipped relative
// positions within each input, "part of" / "not part of" between segment tokens and long tokens.
// Nothing here grows with (tokens × segments): the l2g and g2l labels are computed on the device
// from the per-token segment numbers, chunk by chunk.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "model/format/config.h"

namespace longqa {

struct EtcInput {
  // CLS, question tokens, one token per segment, then one per entity (etc.entity_globals)
  std::vector<int32_t> global_ids;
  std::vector<int64_t> global_segment;    // per global token: its segment, or -1
  std::vector<int64_t> global_positions;  // position ids (etc.positions "paragraph"), else empty
  std::vector<int32_t> long_ids;          // the document's tokens
  std::vector<int64_t> long_segment;      // per long token: its segment
  std::vector<int64_t> long_positions;    // position ids (etc.positions "paragraph"), else empty
  std::vector<int64_t> long_match;        // per long token: exact-match flag (empty: all 0)
  // Per long token: the global row of the entity token it mentions, or -1 (empty: none). A
  // mention is "part of" its entity token as a token is of its segment token.
  std::vector<int64_t> long_entity;
};

// The entity words of a document (etc.entity_globals): words of two or more pieces (a piece run
// sharing one word span, as the tokenizer's words) whose piece sequence recurs in two or more
// paragraphs. Uncommon words split into pieces, so these are mostly names. At most
// `max_entities`: first those that share a paragraph with a word of the question (its pieces in a
// row among the question's: the names a question's second hop may go through), then those in the
// fewest paragraphs (the most specific; ties: the earliest); numbered by first mention. Returns
// per token its entity or -1, and each entity's first piece.
std::vector<int64_t> EntityOfTokens(const std::vector<int32_t>& ids,
                                    const std::vector<int64_t>& token_paragraph,
                                    const std::vector<std::pair<int64_t, int64_t>>& word_spans,
                                    const std::vector<int32_t>& question_pieces,
                                    int64_t max_entities, std::vector<int32_t>* first_pieces);

// Segment of each paragraph: the paragraph itself while there are at most `max_segments`;
// beyond, consecutive paragraphs share a segment, cut at about equal token counts (a paragraph
// goes to segment floor(first token · max_segments / tokens), renumbered densely), so that
// segments stay contiguous and at most `max_segments`. Returns the number of segments too.
std::vector<int64_t> SegmentOfParagraphs(const std::vector<int64_t>& token_paragraph,
                                         int64_t num_paragraphs, int64_t max_segments,
                                         int64_t* num_segments);

// Builds the ETC input of one request from its question pieces (no CLS/SEP) and document, with
// entity tokens where the config asks for them and `word_spans` (per document token, as
// TokenizedDocument's) is given.
EtcInput MakeEtcInput(const ModelConfig& config, const std::vector<int32_t>& question_pieces,
                      const std::vector<int32_t>& document_ids,
                      const std::vector<int64_t>& token_paragraph, int64_t num_paragraphs,
                      const std::vector<std::pair<int64_t, int64_t>>& word_spans = {});

// The l2l tables of one request. Long queries run in blocks of r+1; each block's keys are the
// three neighbouring blocks (3·block key slots), extra pairs masked. Row-major, shapes in comments.
struct EtcRequestPlan {
  int64_t n_g = 0, n_l = 0, block = 0, num_blocks = 0;
  std::vector<int64_t> block_index;   // [num_blocks, 3·block]: long row of a key slot, or -1
  std::vector<int64_t> local_labels;  // [block, 3·block]: l2l label by (query, slot), -1 if out
  std::vector<int64_t> g2g_labels;    // [n_g, n_g]: clipped relative position labels
};

EtcRequestPlan PlanEtcRequest(const ModelConfig& config, const EtcInput& input);

}  // namespace longqa
