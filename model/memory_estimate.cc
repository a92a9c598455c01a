#include "model/memory_estimate.h"

#include <algorithm>

#include "model/encoders/etc_encoder.h"
#include "model/encoders/transformer_layer.h"
#include "model/encoders/window_plan.h"

namespace longqa {

namespace {

// Floats live in a dense layer over `rows` token rows, besides its attention scores: the input,
// Q/K/V, the attention context and output, the residual sum and the FFN's two [rows, ffn]
// tensors (before and after GELU), which row blocks bound to kInferenceChunkRows rows.
int64_t LayerFloats(const ModelConfig& c, int64_t rows, bool row_blocks) {
  const int64_t ffn_rows = row_blocks ? std::min(rows, kInferenceChunkRows) : rows;
  return rows * 7 * c.hidden_size + ffn_rows * 2 * c.intermediate_size;
}

// One dense layer over `sequences` of `len` rows each, run in groups whose scores fit
// kLayerScoreBudget (TransformerLayer::Forward), and with row blocks of at most
// kInferenceChunkRows rows: a group's activations and scores, plus the layer's sequences once
// (ForwardReplacing writes each group's output over its input).
int64_t GroupedLayerFloats(const ModelConfig& c, int64_t sequences, int64_t len, bool row_blocks) {
  const int64_t per_sequence = std::max<int64_t>(1, c.num_heads * len * len);
  int64_t group = std::min(sequences, std::max<int64_t>(1, kLayerScoreBudget / per_sequence));
  if (row_blocks) group = std::min(group, std::max<int64_t>(1, kInferenceChunkRows / len));
  return LayerFloats(c, group * len, row_blocks) + 2 * group * per_sequence +
         sequences * len * c.hidden_size;
}

// An N layer (neural_clustering_attention.cc) over one request's `rows`: the layer's dense
// tensors, the sorted and blocked q/k/v with their two-block key and value copies, and the scores
// and softmax of the blocks run together (groups within kLayerScoreBudget).
int64_t NeuralClusteringLayerFloats(const ModelConfig& c, int64_t rows, int64_t clusters,
                                    bool row_blocks) {
  const int64_t w = (rows + clusters - 1) / clusters;
  const int64_t blocks = (rows + w - 1) / w;
  const int64_t padded = blocks * w;
  const int64_t per_block = c.num_heads * w * (blocks > 1 ? 2 * w : w);
  const int64_t group = std::min(blocks, std::max<int64_t>(1, kLayerScoreBudget / per_block));
  return LayerFloats(c, rows, row_blocks) + 7 * padded * c.hidden_size + 2 * group * per_block;
}

// A K or I layer (clustered_attention.cc) over one request's `rows`: the dense tensors, one
// head's hash bits (int64: two floats each), the cluster scores and softmax of the heads run
// together, and for I the per-query top-k lists (keys int64, scores, softmax) and value sums.
int64_t ClusteredLayerFloats(const ModelConfig& c, int64_t rows, bool improved, bool row_blocks) {
  const int64_t clusters = std::min(c.clustered.clusters, rows);
  const int64_t per_head = clusters * rows;
  const int64_t heads = std::min(c.num_heads, std::max<int64_t>(1, kLayerScoreBudget / per_head));
  const int64_t topk = improved ? std::min(c.clustered.topk, rows) : 0;
  return LayerFloats(c, rows, row_blocks) + 3 * rows * c.clustered.bits + 2 * heads * per_head +
         c.num_heads * rows * 5 * topk + 3 * rows * c.hidden_size;
}

int64_t ClusterFormerFloats(const ModelConfig& c, const RequestShape& r, bool row_blocks) {
  const int64_t x = std::max<int64_t>(1, r.document_tokens);
  const int64_t windows = NumWindows(x, c.window_tokens, c.stride_tokens);
  // Slots per window; a window below a table's header carries up to table_header_tokens more.
  const int64_t t = r.question_tokens + c.table_header_tokens + std::min(c.window_tokens, x);
  const int64_t rows = x + windows * r.question_tokens;  // H̄: context once, a question per window
  const int64_t window_floats = windows * t * c.hidden_size;
  const int64_t hbar_floats = rows * c.hidden_size;
  // A clustered layer attends within chunks of `stride` rows of the sorted H̄.
  const int64_t chunk = std::max<int64_t>(1, c.stride_tokens);
  // S and C layers let H̄ go while they run (ClusterFormerEncoder::Forward), so the peak is the
  // largest of: a layer over its sequences; an overlap merge (the windows and the new H̄); the
  // embeddings (the window slots' sum and one addend). Measured tensor peaks (memory bench,
  // session 25): MiniLM-shaped SSCSSC at 34,722 tokens 132 MiB (this 134), at 138,888 526 MiB
  // (519); tcmalloc's resident peak 1.0-1.2x of them: hence the 5/4.
  int64_t peak = std::max({GroupedLayerFloats(c, windows, t, row_blocks),
                           GroupedLayerFloats(c, (rows + chunk - 1) / chunk, chunk, row_blocks),
                           window_floats + hbar_floats, 2 * window_floats}) *
                 5 / 4;
  size_t clustered_layer = 0;  // index into num_clusters (C and N layers)
  for (char kind : c.layers) {
    // N, K and I layers read H̄ and keep it: their tensors, H̄ twice and the windows.
    int64_t layer = 0;
    if (kind == 'N') {
      layer = NeuralClusteringLayerFloats(c, rows, c.num_clusters[clustered_layer], row_blocks);
    } else if (kind == 'K' || kind == 'I') {
      layer = ClusteredLayerFloats(c, rows, kind == 'I', row_blocks);
    }
    if (layer > 0) peak = std::max(peak, layer + window_floats + 2 * hbar_floats);
    clustered_layer += kind == 'C' || kind == 'N';
  }
  return peak;
}

// ETC's inference path (etc_encoder.h, AttendInference): the layer's input and the contexts
// (one each, written in place), and the larger of two moments: attention (the head-major copies
// of the long queries, keys and values, a row block of the projection being copied, and one chunk
// of scores with its softmax: etc_encoder.h's chunk each, for long and global queries alike;
// the long queries' softmax is written over its scores on AVX-512 CPUs, not elsewhere: two counted;
// where the fused ETC kernels run (AVX-512, or AVX2 in fp32) no chunk exists at all: 8 MiB over
// there, kept for all CPUs)
// and Finish (a row block's dense tensors where the layers run them, else the whole layer's).
// Measured tensor peaks of models/scratch_etc at 5k-42k tokens: 40-185 MiB with Q, K and V made
// at once and contexts concatenated, 32-124 MiB since (docs/perf/README.md, session 26), 23-115
// with the score chunk halved (session 27); before the 5/4 the formula gives 0.97x the tensor
// peak at 63k tokens, and tcmalloc's resident peak is 1.23x it: hence the 5/4, as for
// Cluster-Former.
int64_t EtcFloats(const ModelConfig& c, const RequestShape& r, bool row_blocks) {
  const int64_t segments = std::min(std::max<int64_t>(1, r.paragraphs), c.etc.max_segments);
  // Entity tokens: at most etc.entity_globals, and at most a quarter of the tokens (an entity has
  // two mentions or more of two pieces or more).
  const int64_t entities = std::min(c.etc.entity_globals, r.document_tokens / 4);
  const int64_t globals = r.question_tokens + segments + entities;
  const int64_t longs = std::max<int64_t>(1, r.document_tokens);
  const int64_t block = c.etc.radius + 1;
  const int64_t padded = (longs + block - 1) / block * block;
  // Row blocks mean a CPU (the GPU's larger chunk counted otherwise).
  const int64_t chunk = std::min(EtcInferenceChunkScores(row_blocks),
                                 std::max(longs * c.num_heads * (globals + 3 * block),
                                          globals * c.num_heads * (globals + longs)));
  const int64_t rows = globals + longs;
  const int64_t block_rows = row_blocks ? std::min(rows, kInferenceChunkRows) : rows;
  const int64_t attention = 3 * padded * c.hidden_size + block_rows * c.hidden_size + 2 * chunk;
  const int64_t finish = LayerFloats(c, block_rows, row_blocks);
  return (2 * rows * c.hidden_size + std::max(attention, finish)) * 5 / 4;
}

}  // namespace

int64_t EstimateActivationBytes(const ModelConfig& config, const RequestShape& shape,
                                bool row_blocks) {
  const int64_t floats = config.architecture == Architecture::kEtc
                             ? EtcFloats(config, shape, row_blocks)
                             : ClusterFormerFloats(config, shape, row_blocks);
  // Plus what does not grow with the layer sizes: plans, decoding, the allocator's slack.
  constexpr int64_t kFixedBytes = int64_t{32} << 20;
  return 4 * floats + kFixedBytes;
}

}  // namespace longqa
