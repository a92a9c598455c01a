// The host side of the ETC encoder (etc_encoder.h): a request's global and long inputs, and the
// index, label and mask tables its attention reads, built as plain vectors without tensors (as
// window_plan.h does for Cluster-Former) so they are checked directly (tests/unit/etc_plan_test).
// The relative labels follow ETC §3 and appendix A (docs/references.md): clipped relative
// positions within each input, "part of" / "not part of" between segment tokens and long tokens.
#pragma once

#include <cstdint>
#include <vector>

#include "model/format/config.h"

namespace longqa {

struct EtcInput {
  std::vector<int32_t> global_ids;        // CLS, question tokens, one segment token per paragraph
  std::vector<int64_t> global_paragraph;  // per global token: its paragraph, or -1
  std::vector<int32_t> long_ids;          // the document's tokens
  std::vector<int64_t> long_paragraph;    // per long token: its paragraph
  std::vector<int64_t> long_match;        // per long token: exact-match flag (empty: all 0)
};

// Builds the ETC input of one request from its question pieces (no CLS/SEP) and document.
EtcInput MakeEtcInput(const ModelConfig& config, const std::vector<int32_t>& question_pieces,
                      const std::vector<int32_t>& document_ids,
                      const std::vector<int64_t>& token_paragraph, int64_t num_paragraphs);

// The tables of one request. Long queries run in blocks of r+1; each block's keys are the three
// neighbouring blocks (3·block key slots), extra pairs masked. Row-major, shapes in comments.
struct EtcRequestPlan {
  int64_t n_g = 0, n_l = 0, block = 0, num_blocks = 0;
  std::vector<int64_t> block_index;    // [num_blocks, 3·block]: long row of a key slot, or -1
  std::vector<int64_t> local_labels;   // [block, 3·block]: l2l label by (query, slot), -1 if out
  std::vector<int64_t> local_valid;    // [num_blocks, block, 3·block]: 1 where the pair attends
  std::vector<int64_t> l2g_labels;     // [num_blocks·block, n_g]
  std::vector<int64_t> global_labels;  // [n_g, n_g + n_l]: g2g then g2l
  std::vector<int64_t> global_valid;   // [n_g, n_g + n_l]: 0 where hard g2l masking hides a key
};

EtcRequestPlan PlanEtcRequest(const ModelConfig& config, const EtcInput& input);

}  // namespace longqa
