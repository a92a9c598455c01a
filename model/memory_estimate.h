// What one request costs in activation memory while the encoder runs: the admission measure of
// the server's memory budgets (--max_request_memory_mb, --max_batch_memory_mb). The estimate is
// the peak of one layer's live fp32 tensors (projections, scores, softmax, FFN) plus the states
// that live across layers, at the loaded model's sizes; the windows of a batch are packed into
// one encoder pass, so a batch costs about the sum of its requests. Compared with measured peaks
// by `longqa-memory-bench` (tests/integration/memory_estimate_test.sh; docs/reliability.md).
#pragma once

#include <cstdint>

#include "model/format/config.h"

namespace longqa {

struct RequestShape {
  int64_t question_tokens = 0;  // with CLS and SEP
  int64_t document_tokens = 0;
  int64_t paragraphs = 0;
};

// Bytes. `row_blocks`: the layers run their inference path in row blocks (RunsInRowBlocks in
// model/encoders/transformer_layer.h: on the CPU), which bounds the FFN's tensors
// and a sliding-window layer's groups by kInferenceChunkRows.
int64_t EstimateActivationBytes(const ModelConfig& config, const RequestShape& shape,
                                bool row_blocks);

}  // namespace longqa
