// One post-LayerNorm transformer encoder layer (BERT/RoBERTa: attention → add & norm → GELU FFN →
// add & norm), applied to a batch of independent sequences with a key padding mask. Both the
// Cluster-Former's sliding-window layers (sequences = windows) and its cluster layers
// (sequences = chunks of clustered rows) run through this.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>

#include "model/encoders/int8_linear.h"
#include "model/encoders/precision.h"
#include "model/encoders/stop_check.h"
#include "model/format/config.h"
#include "model/format/weights.h"

namespace longqa {

// One dense (Linear) layer of the inference path in the layer's precision: fp32 weights; bf16
// copies (the input cast to bf16, the output bf16); or int8 (fp32 in and out, Int8Linear).
// `name` (its place in the model, e.g. "encoder.layer.3.ffn2") is what int8 calibration records
// and finds its statistics under (int8_calibration.h).
struct InferenceDense {
  at::Tensor weight, bias;
  std::shared_ptr<const Int8Linear> int8;  // shared: layers are copied into the encoders' vectors
  std::string name;

  InferenceDense() = default;
  InferenceDense(const at::Tensor& w, const at::Tensor& b, Precision precision,
                 std::string name = "");
  at::Tensor operator()(const at::Tensor& x) const;
  // gelu(this(x)): in int8 on each output row while it is in cache (Int8Linear).
  at::Tensor WithGelu(const at::Tensor& x) const;
  // The rows [begin, begin + n) of the output (Q, K or V of a stacked QKV layer), named `name`.
  InferenceDense Rows(int64_t begin, int64_t n, std::string name) const;
};

// A layer runs its sequences in groups whose attention scores hold at most this many elements
// (B * heads * T * T floats: 128 MiB), so its memory does not grow with the window count.
inline constexpr int64_t kLayerScoreBudget = int64_t{32} << 20;
// Within a group, the inference path's attention runs chunks of sequence-heads whose scores hold
// about this many elements (7 MiB in fp32: a few 276-token windows' heads), to stay in cache.
inline constexpr int64_t kAttentionChunkScores = int64_t{2} << 20;
// On the CPU, the inference path runs a layer about this many rows at a time (whole windows of a
// sliding-window layer; row blocks of Finish for the others), so that a block's GEMM outputs are
// still in cache for the elementwise passes after them (bias, GELU, residual add, LayerNorm,
// casts), and a layer's temporaries do not grow with the document. Measured at d 768, 8k tokens,
// bf16 on AMX: 3,150-3,800 tokens/s with whole layers, 3,850-4,300 with blocks of 1,104-2,208
// rows (fp32: within noise). int8 too since its activations are quantised row by row (a block's
// rows are rounded as they would be in any other call).
inline constexpr int64_t kInferenceChunkRows = 1536;
// Whether layers on this device run their inference path in those row blocks (in every precision).
inline bool RunsInRowBlocks(const at::Device& device) { return device.is_cpu(); }

class TransformerLayer {
 public:
  // Takes the weights under `scope` (e.g. "encoder.layer.3"). kInt8 quantises the dense layers
  // (Q/K/V, output, FFN) for the inference path (frozen weights on the CPU); kBf16 runs them and
  // the attention GEMMs in bf16 (frozen weights). `separate_qkv`: the layer has a pattern of its
  // own (ETC, the N, K, I layers) and projects q, k, v one at a time (QueryKeyValuePart); in int8
  // they then get int8 layers of their own (elsewhere fp32 rows of the stacked matrix: the S and
  // C layers use the stacked projection, and would only carry the copies).
  TransformerLayer(const TensorMap& weights, const std::string& scope, const ModelConfig& config,
                   Precision precision = Precision::kFp32, bool separate_qkv = false);

  // x [B, T, d]; valid [B, T] bool (false = padding, never attended to). Returns [B, T, d].
  // Large batches run in groups so that the attention scores stay within a memory bound; `stop`
  // is asked before each group after the first (BatchStopped): a long document's abandoned work
  // ends within a group of windows, not a whole layer.
  at::Tensor Forward(const at::Tensor& x, const at::Tensor& valid,
                     const StopCheck& stop = nullptr) const;
  // Forward for a caller that gives up x (a fresh, contiguous tensor nobody else reads): where the
  // layer runs its sequences in groups without autograd, each group's output is written over its
  // own input rows (a group reads only its own sequences), so the layer holds one copy of the
  // sequences instead of two; else Forward.
  at::Tensor ForwardReplacing(at::Tensor x, const at::Tensor& valid,
                              const StopCheck& stop = nullptr) const;

  // The pieces around the attention pattern, for layers with their own pattern (ETC, cluster
  // layers): the q, k, v projections of x [..., d] (in x's dtype whatever the precision), and the
  // output projection + add & norm + FFN + add & norm of the attention context.
  at::Tensor Query(const at::Tensor& x) const;
  at::Tensor Key(const at::Tensor& x) const;
  at::Tensor Value(const at::Tensor& x) const;
  // q, k or v (part 0, 1, 2) of x [n, d] in the dtype the attention GEMMs run in
  // (attention_dtype()): bf16 for kBf16 on the inference path, so attention reads them without a
  // round trip through fp32; else fp32. One GEMM each, for a caller that lets each go before it
  // makes the next (ETC's inference path holds one projection, not three).
  at::Tensor QueryKeyValuePart(int part, const at::Tensor& x) const;
  at::ScalarType attention_dtype() const { return InferencePath() ? attention_dtype_ : at::kFloat; }
  // kInt8 layers: whether fp32 attention heads are multiplied by bf16 dot products where a fused
  // kernel takes them (the window attention here; ETC's kernels in etc_encoder.cc).
  bool bf16_attention_products() const { return InferencePath() && bf16_attention_products_; }
  at::Tensor Finish(const at::Tensor& x, const at::Tensor& context) const;
  // Finish for a caller that gives up x (contiguous, read by nobody else): on the inference
  // path's row blocks each block's result is written over its own rows of x, so the layer's
  // input and output are one tensor; else Finish.
  at::Tensor FinishReplacing(at::Tensor x, const at::Tensor& context) const;

 private:
  at::Tensor ForwardGroup(const at::Tensor& x, const at::Tensor& valid) const;
  // Sequences of t tokens that Forward runs together (kLayerScoreBudget; kInferenceChunkRows).
  int64_t GroupSize(int64_t t) const;
  // Inference over groups of `group` sequences, each group's output copied into its rows of
  // `out` (allocated from the first group's output where undefined; x itself for
  // ForwardReplacing). Returns out.
  at::Tensor ForwardGroupsInto(const at::Tensor& x, const at::Tensor& valid, int64_t group,
                               at::Tensor out, const StopCheck& stop) const;
  // Whether this call takes the inference path: frozen weights (qkv_w_ made) and autograd off.
  bool InferencePath() const;
  // Inference only (autograd off, weights frozen): ForwardGroup with Q, K and V from one GEMM,
  // the score scale inside the score GEMM, activations updated in place, and the GEMMs in the
  // layer's precision (the residual stream between layers stays fp32).
  at::Tensor ForwardGroupInference(const at::Tensor& x, const at::Tensor& valid) const;
  // Its attention: the context [B, T, d] (in the attention dtype).
  at::Tensor AttendGroupInference(const at::Tensor& x, const at::Tensor& valid) const;
  // Into `out` ([rows of x, d], which may be x itself: a row block reads only its own rows) where
  // it runs in row blocks and `out` is given; else into a new tensor.
  at::Tensor FinishInference(const at::Tensor& x, const at::Tensor& context,
                             at::Tensor out = at::Tensor()) const;
  at::Tensor FinishRows(const at::Tensor& x, const at::Tensor& context) const;

  int64_t num_heads_;
  double eps_;
  at::Tensor q_w_, q_b_, k_w_, k_b_, v_w_, v_b_, o_w_, o_b_, ln1_w_, ln1_b_;
  at::Tensor i_w_, i_b_, f_w_, f_b_, ln2_w_, ln2_b_;
  // [3d, d] and [3d]: q, k, v weights stacked; defined only when the weights are frozen (the
  // trainer's require grad and change every step, so a copy would go stale).
  at::Tensor qkv_w_, qkv_b_;
  // The inference path's dense layers (defined with qkv_w_) and the dtype its attention GEMMs run
  // in (bf16 for kBf16, else fp32). q_, k_, v_: the q, k, v of layers with their own pattern
  // (QueryKeyValuePart), rows of qkv_; in int8 three Int8Linear of their own where the layer
  // projects them apart (an Int8Linear has no row views; ETC's q/k/v were fp32 GEMMs until
  // session 34, more than half of its int8 dense time), else fp32 rows.
  InferenceDense qkv_, q_, k_, v_, o_, i_, f_;
  at::ScalarType attention_dtype_ = at::kFloat;
  // kInt8: the window attention's fp32 heads multiplied by bf16 dot products where the fused
  // kernel takes them (AVX512_BF16 CPUs; fused_cpu_attention.h): int8's GEMMs run at 3-4x the
  // fp32 rate there, and fp32 attention was a quarter of an int8 MiniLM layer's time.
  bool bf16_attention_products_ = false;
  // Whether the inference path runs in blocks of kInferenceChunkRows (fp32 and bf16 on the CPU).
  bool row_blocks_ = false;
};

// RoBERTa-style embeddings: word + position + token type (+ exact match), then LayerNorm. Models
// without absolute positions (ETC) have no position table and pass an undefined `positions`.
class Embeddings {
 public:
  Embeddings(const TensorMap& weights, const ModelConfig& config);
  // ids, positions, exact_match, types [B, T] int64 → [B, T, d]. exact_match (0/1 per token) is
  // read only by models with the exact-match feature; undefined `types` means type 0 everywhere.
  at::Tensor Forward(const at::Tensor& ids, const at::Tensor& positions,
                     const at::Tensor& exact_match, const at::Tensor& types = at::Tensor()) const;

 private:
  double eps_;
  at::Tensor word_, position_, type_, exact_match_, ln_w_, ln_b_;
};

// Fetches a weight by name; throws std::out_of_range naming it (weights are validated on load).
const at::Tensor& WeightAt(const TensorMap& weights, const std::string& name);

}  // namespace longqa
