// The ETC encoder (ETC §3 and appendix A; docs/references.md). Global input: CLS, one token per
// question token, one segment token per paragraph (consecutive paragraphs merged into at most
// etc.max_segments segments). Long input: the document's tokens. Attention in two softmaxes:
// global queries over g2g + g2l keys, long queries over l2g + l2l keys; l2l limited to radius r and
// computed in blocks of r+1 (each block attends to itself and its two neighbours, extra pairs
// masked). Relative labels replace absolute positions: clipped relative positions (k) within each
// input, and "part of"/"not part of" between segment tokens and long tokens; a BERT lift may keep
// paragraph positions too (etc.positions). Optional hard g2l mask (a segment token sees only its
// own segment) and separate global projections; optional entity tokens (etc.entity_globals: ETC's
// WikiHop links, a global token "part of" each mention of a recurring name).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "model/encoders/etc_plan.h"
#include "model/encoders/stop_check.h"
#include "model/encoders/transformer_layer.h"
#include "model/format/config.h"
#include "model/format/weights.h"

namespace longqa {

struct EtcOutput {
  at::Tensor global_states;                       // [sum n_g, d], requests concatenated
  at::Tensor long_states;                         // [sum n_l, d]
  std::vector<int64_t> global_begin, long_begin;  // [n+1] offsets per request
};

// Attention queries run in chunks whose score blocks hold at most this many elements (64 MB in
// fp32), so that attention's transient memory does not grow with the document: a 100k-token
// document with 256 segments costs the same per chunk as a 4k-token one.
inline constexpr int64_t kEtcScoreBudget = int64_t{1} << 24;
// The inference path (autograd off) in LibTorch's form (GPUs, CPUs with neither the AVX-512 nor
// the AVX2 paths, bf16 heads without AVX-512: the fused kernels of fused_etc_attention.h hold no
// score chunk) works on smaller score chunks,
// about this many elements (4 MB in fp32) on the CPU: scores, their biases and softmax stay in
// cache between passes. A chunk and its softmax are most of ETC's memory that does not grow with
// the document: 2M elements cost 9 MiB more tensor peak than 1M at 5k-42k tokens
// (models/scratch_etc), at the same speed within noise (bench/results/etc_memory/session27.txt). A
// GPU keeps 2M: each chunk is several kernel launches a head, and smaller chunks were not measured
// there.
inline constexpr int64_t kEtcInferenceChunkScores = int64_t{1} << 20;
inline constexpr int64_t kEtcGpuInferenceChunkScores = int64_t{2} << 20;

// The inference path's attention on the CPU: kFused the fused kernels of fused_etc_attention.h
// where they apply (their AVX-512 form, else their AVX2 form), kFusedAvx2 their AVX2 form even on
// AVX-512 CPUs (fp32 heads), kLibTorch LibTorch's chunked form.
enum class EtcCpuAttention { kFused, kFusedAvx2, kLibTorch };
inline int64_t EtcInferenceChunkScores(bool on_cpu) {
  return on_cpu ? kEtcInferenceChunkScores : kEtcGpuInferenceChunkScores;
}

class EtcEncoder {
 public:
  // `score_budget` (elements) bounds a chunk's score block; tests pass a small one to exercise
  // the chunking on small inputs.
  // kInt8 quantises each layer's output and FFN (TransformerLayer); the attention projections
  // stay fp32.
  EtcEncoder(const ModelConfig& config, const TensorMap& weights,
             int64_t score_budget = kEtcScoreBudget, Precision precision = Precision::kFp32);

  // Dense parts run over the rows of all requests at once; attention runs per request. `stop` is
  // asked before every layer and every chunk of long queries (on the inference path also every
  // chunk of long keys the global queries read) (stop_check.h).
  EtcOutput Forward(const std::vector<EtcInput>& inputs, const at::Device& device,
                    const StopCheck& stop = nullptr) const;

  // The form of the inference path's attention on the CPU (kFused by default): a before/after in
  // one benchmark run, and the tests that the forms agree.
  void set_cpu_attention(EtcCpuAttention form) { cpu_attention_ = form; }

  // Training (autograd on): each layer's graph is dropped after its forward pass and rebuilt
  // when backward reaches it (recomputed_in_backward.h). The trainable path keeps every layer's
  // global-local scores for backward, [n_l, n_g] a head, so its memory grows with tokens ×
  // segments: 12.9 GB at etc.max_segments 256 on a 1,195-paragraph document, over 24 GB at 1024
  // (session 75). Costs one more forward pass of each layer.
  void set_recompute_layers(bool on) { recompute_layers_ = on; }

 private:
  struct Layer {
    TransformerLayer base;                          // long (or shared) projections, output, FFN
    at::Tensor gq_w, gq_b, gk_w, gk_b, gv_w, gv_b;  // separate global projections, if any
    at::Tensor relative_key;                        // [L, d]
  };
  struct RequestTables;

  // q, k or v (part 0, 1, 2) of global rows xg: the long projections' (shared) or their own.
  at::Tensor GlobalProjection(const Layer& layer, int part, const at::Tensor& xg) const;
  // Attention context of one request: returns {global [n_g, d], long [n_l, d]}.
  std::pair<at::Tensor, at::Tensor> Attend(const Layer& layer, const at::Tensor& qg,
                                           const at::Tensor& kg, const at::Tensor& vg,
                                           const at::Tensor& ql, const at::Tensor& kl,
                                           const at::Tensor& vl, const RequestTables& t,
                                           const StopCheck& stop) const;
  // The same for inference (autograd off), block by block: scores written by GEMMs into a
  // cache-sized chunk, ETC's label and membership terms added in place (kernels/etc_score_bias.h),
  // local keys read from overlapping views of head-major K and V instead of gathered copies, and
  // global queries over the long keys with a running (online) softmax, so that no tensor grows
  // with tokens × segments. Takes the request's layer input (global rows xg, long rows xl) and
  // makes q, k and v one at a time, each let go once its head-major copy is made; writes the
  // contexts into g_out [n_g, d] and l_out [n_l, d].
  void AttendInference(const Layer& layer, const at::Tensor& xg, const at::Tensor& xl,
                       const RequestTables& t, const StopCheck& stop, at::Tensor g_out,
                       at::Tensor l_out) const;

  ModelConfig config_;
  int64_t score_budget_;
  EtcCpuAttention cpu_attention_ = EtcCpuAttention::kFused;
  bool recompute_layers_ = false;
  Embeddings embeddings_;
  std::vector<Layer> layers_;
};

}  // namespace longqa
