#include "model/encoders/transformer_layer.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "model/encoders/bf16_products.h"
#include "model/encoders/fused_cpu_attention.h"
#include "model/encoders/fused_cpu_ops.h"
#include "model/encoders/int8_calibration.h"

namespace longqa {

InferenceDense::InferenceDense(const at::Tensor& w, const at::Tensor& b, Precision precision,
                               std::string name)
    : name(std::move(name)) {
  if (precision == Precision::kInt8) {
    const Int8InputStats* stats =
        this->name.empty() ? nullptr : Int8CalibrationInUse::Find(this->name);
    int8 = std::make_shared<const Int8Linear>(w, b, stats);
  } else {
    const at::ScalarType dtype = precision == Precision::kBf16 ? at::kBFloat16 : at::kFloat;
    weight = w.to(dtype).contiguous();
    bias = b.to(dtype).contiguous();
  }
}

at::Tensor InferenceDense::operator()(const at::Tensor& x) const {
  if (int8) return int8->Forward(x);
  Int8CalibrationRecording::Record(name, x);
  return at::linear(x.to(weight.scalar_type()), weight, bias);
}

at::Tensor InferenceDense::WithGelu(const at::Tensor& x) const {
  if (int8) return int8->Forward(x, Int8Linear::Activation::kGelu);
  return GeluInPlace((*this)(x));
}

InferenceDense InferenceDense::Rows(int64_t begin, int64_t n, std::string rows_name) const {
  if (int8) throw std::logic_error("InferenceDense::Rows of an int8 layer");
  InferenceDense rows;
  rows.weight = weight.narrow(0, begin, n);  // contiguous: whole rows of a contiguous matrix
  rows.bias = bias.narrow(0, begin, n);
  rows.name = std::move(rows_name);
  return rows;
}

const at::Tensor& WeightAt(const TensorMap& weights, const std::string& name) {
  const auto it = weights.find(name);
  if (it == weights.end()) throw std::out_of_range("missing weight '" + name + "'");
  return it->second;
}

TransformerLayer::TransformerLayer(const TensorMap& w, const std::string& s,
                                   const ModelConfig& config, Precision precision,
                                   bool separate_qkv)
    : num_heads_(config.num_heads), eps_(config.layer_norm_eps) {
  const std::string a = s + ".attention.";
  q_w_ = WeightAt(w, a + "self.query.weight");
  q_b_ = WeightAt(w, a + "self.query.bias");
  k_w_ = WeightAt(w, a + "self.key.weight");
  k_b_ = WeightAt(w, a + "self.key.bias");
  v_w_ = WeightAt(w, a + "self.value.weight");
  v_b_ = WeightAt(w, a + "self.value.bias");
  o_w_ = WeightAt(w, a + "output.dense.weight");
  o_b_ = WeightAt(w, a + "output.dense.bias");
  ln1_w_ = WeightAt(w, a + "output.LayerNorm.weight");
  ln1_b_ = WeightAt(w, a + "output.LayerNorm.bias");
  i_w_ = WeightAt(w, s + ".intermediate.dense.weight");
  i_b_ = WeightAt(w, s + ".intermediate.dense.bias");
  f_w_ = WeightAt(w, s + ".output.dense.weight");
  f_b_ = WeightAt(w, s + ".output.dense.bias");
  ln2_w_ = WeightAt(w, s + ".output.LayerNorm.weight");
  ln2_b_ = WeightAt(w, s + ".output.LayerNorm.bias");
  if (!q_w_.requires_grad() && !k_w_.requires_grad() && !v_w_.requires_grad()) {
    qkv_w_ = at::cat({q_w_, k_w_, v_w_}, 0);
    qkv_b_ = at::cat({q_b_, k_b_, v_b_}, 0);
  }
  if (precision != Precision::kFp32 && !qkv_w_.defined()) {
    throw std::invalid_argument(std::string(PrecisionName(precision)) +
                                " layers need frozen weights");
  }
  if (precision == Precision::kInt8 && !q_w_.device().is_cpu()) {
    throw std::invalid_argument("int8 runs on the CPU only");
  }
  if (!qkv_w_.defined()) return;
  // (Layers that project q, k, v apart never call the stacked one in int8: unnamed there, it is
  // not calibrated and not counted as a calibrated layer.)
  const bool stacked_unused = precision == Precision::kInt8 && separate_qkv;
  qkv_ = InferenceDense(qkv_w_, qkv_b_, precision, stacked_unused ? "" : s + ".qkv");
  o_ = InferenceDense(o_w_, o_b_, precision, s + ".attention_output");
  i_ = InferenceDense(i_w_, i_b_, precision, s + ".ffn1");
  f_ = InferenceDense(f_w_, f_b_, precision, s + ".ffn2");
  // Query/Key/Value of layers with their own pattern: fp32 or bf16 rows of the stacked matrix;
  // in int8 layers of their own where the layer projects them apart (an Int8Linear has no row
  // views; each output row has its own scale, so the three quantise as the stacked one does),
  // else fp32 rows.
  if (precision == Precision::kInt8 && separate_qkv) {
    q_ = InferenceDense(q_w_, q_b_, precision, s + ".q");
    k_ = InferenceDense(k_w_, k_b_, precision, s + ".k");
    v_ = InferenceDense(v_w_, v_b_, precision, s + ".v");
  } else {
    const InferenceDense stacked =
        precision == Precision::kInt8 ? InferenceDense(qkv_w_, qkv_b_, Precision::kFp32) : qkv_;
    const int64_t d = q_w_.size(0);
    q_ = stacked.Rows(0, d, s + ".q");
    k_ = stacked.Rows(d, d, s + ".k");
    v_ = stacked.Rows(2 * d, d, s + ".v");
  }
  if (precision == Precision::kBf16) attention_dtype_ = at::kBFloat16;
  bf16_attention_products_ = precision == Precision::kInt8;
  row_blocks_ = RunsInRowBlocks(q_w_.device());
}

bool TransformerLayer::InferencePath() const {
  return qkv_w_.defined() && !at::GradMode::is_enabled();
}

int64_t TransformerLayer::GroupSize(int64_t t) const {
  const int64_t per_sequence = std::max<int64_t>(1, num_heads_ * t * t);
  int64_t group = std::max<int64_t>(1, kLayerScoreBudget / per_sequence);
  if (row_blocks_ && InferencePath()) {
    group = std::min(group, std::max<int64_t>(1, kInferenceChunkRows / std::max<int64_t>(1, t)));
  }
  return group;
}

at::Tensor TransformerLayer::Forward(const at::Tensor& x, const at::Tensor& valid,
                                     const StopCheck& stop) const {
  const int64_t b = x.size(0);
  const int64_t group = GroupSize(x.size(1));
  if (b <= group) return ForwardGroup(x, valid);
  if (at::GradMode::is_enabled()) {  // training: autograd keeps every group's graph anyway
    std::vector<at::Tensor> outs;
    for (int64_t begin = 0; begin < b; begin += group) {
      if (begin > 0) StopIfAsked(stop);
      const int64_t n = std::min(group, b - begin);
      outs.push_back(ForwardGroup(x.narrow(0, begin, n), valid.narrow(0, begin, n)));
    }
    return at::cat(outs, 0);
  }
  // Each group's output straight into the layer's: the groups' outputs and their concatenation
  // were two whole copies of the layer's output alive at once (peak memory a token, issue 22).
  return ForwardGroupsInto(x, valid, group, at::Tensor(), stop);
}

at::Tensor TransformerLayer::ForwardReplacing(at::Tensor x, const at::Tensor& valid,
                                              const StopCheck& stop) const {
  const int64_t group = GroupSize(x.size(1));
  if (x.size(0) <= group || at::GradMode::is_enabled() || !x.is_contiguous() || x.requires_grad()) {
    return Forward(x, valid, stop);
  }
  return ForwardGroupsInto(x, valid, group, x, stop);  // a group reads only its own rows of x
}

at::Tensor TransformerLayer::ForwardGroupsInto(const at::Tensor& x, const at::Tensor& valid,
                                               int64_t group, at::Tensor out,
                                               const StopCheck& stop) const {
  const int64_t b = x.size(0);
  for (int64_t begin = 0; begin < b; begin += group) {
    if (begin > 0) StopIfAsked(stop);
    const int64_t n = std::min(group, b - begin);
    const at::Tensor y = ForwardGroup(x.narrow(0, begin, n), valid.narrow(0, begin, n));
    if (!out.defined()) {
      std::vector<int64_t> shape = y.sizes().vec();
      shape[0] = b;
      out = at::empty(shape, y.options());
    }
    at::Tensor rows = out.narrow(0, begin, n);
    if (y.sizes() != rows.sizes() || y.scalar_type() != out.scalar_type()) {
      throw std::logic_error("TransformerLayer: a group's output unlike the layer's");
    }
    rows.copy_(y);
  }
  return out;
}

at::Tensor TransformerLayer::ForwardGroup(const at::Tensor& x, const at::Tensor& valid) const {
  if (InferencePath()) return ForwardGroupInference(x, valid);
  const int64_t b = x.size(0), t = x.size(1), d = x.size(2);
  const int64_t dh = d / num_heads_;
  auto heads = [&](const at::Tensor& y) {  // [B, T, d] → [B, h, T, dh]
    return y.view({b, t, num_heads_, dh}).transpose(1, 2);
  };
  const at::Tensor q = heads(Query(x));
  const at::Tensor k = heads(Key(x));
  const at::Tensor v = heads(Value(x));
  at::Tensor scores =
      at::matmul(q, k.transpose(-1, -2)).mul_(1.0 / std::sqrt(static_cast<double>(dh)));
  scores.masked_fill_(valid.logical_not().view({b, 1, 1, t}), -1e30);
  const at::Tensor context =
      at::matmul(at::softmax(scores, -1), v).transpose(1, 2).reshape({b, t, d});
  return Finish(x, context);
}

at::Tensor TransformerLayer::ForwardGroupInference(const at::Tensor& x,
                                                   const at::Tensor& valid) const {
  // The attention's Q/K/V and copies are let go before Finish allocates the FFN's (peak memory
  // a token, issue 22: they were alive through Finish).
  return FinishInference(x, AttendGroupInference(x, valid));
}

at::Tensor TransformerLayer::AttendGroupInference(const at::Tensor& x,
                                                  const at::Tensor& valid) const {
  const int64_t b = x.size(0), t = x.size(1), d = x.size(2);
  const int64_t h = num_heads_, dh = d / num_heads_;
  const at::Tensor stacked = qkv_(x).to(attention_dtype_);  // [B, T, 3d]
  // fp32 or bf16 on an AVX-512 CPU: one pass per (window, head), no layout copies
  // (fused_cpu_attention.h).
  if (bf16_attention_products_ && FusedWindowAttentionTakesBf16Products(stacked, h)) {
    return FusedWindowAttention(stacked, valid, h, /*bf16_products=*/true);
  }
  if (FusedWindowAttentionApplies(stacked, h)) return FusedWindowAttention(stacked, valid, h);
  // [B, T, 3d] → q, k, v as [B*h, T, dh] (reshape copies each into the layout bmm takes).
  const at::Tensor qkv = stacked.view({b, t, 3, h, dh}).permute({2, 0, 3, 1, 4});
  const at::Tensor q = qkv[0].reshape({b * h, t, dh});
  const at::Tensor k = qkv[1].reshape({b * h, t, dh});
  const at::Tensor v = qkv[2].reshape({b * h, t, dh});
  // Padding as an additive bias [B*h, 1, T], broadcast over the query rows by baddbmm, which
  // also applies the 1/sqrt(dh) scale inside the GEMM.
  const at::Tensor bias = at::zeros({b, 1, 1, t}, x.options().dtype(attention_dtype_))
                              .masked_fill_(valid.logical_not().view({b, 1, 1, t}), -1e30)
                              .expand({b, h, 1, t})
                              .reshape({b * h, 1, t});
  // Scores, softmax and the weighted sum run a few sequence-heads at a time, so that each chunk's
  // scores stay in the core's cache between the three passes (measured: half the time of one
  // pass over all scores, fp32 and bf16 alike; docs/perf/README.md). bf16 scores: LibTorch's
  // CPU softmax sums them in fp32.
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  const int64_t chunk = std::max<int64_t>(1, kAttentionChunkScores / (t * t));
  at::Tensor heads_context = at::empty({b * h, t, dh}, q.options());
  for (int64_t begin = 0; begin < b * h; begin += chunk) {
    const int64_t n = std::min(chunk, b * h - begin);
    const at::Tensor scores = at::baddbmm(bias.narrow(0, begin, n), q.narrow(0, begin, n),
                                          k.narrow(0, begin, n).transpose(1, 2), 1.0, scale);
    at::Tensor out = heads_context.narrow(0, begin, n);  // contiguous: whole leading rows
    Bf16SafeBmmOut(out, SoftmaxLastDim(scores), v.narrow(0, begin, n));
  }
  return heads_context.view({b, h, t, dh}).transpose(1, 2).reshape({b, t, d});
}

at::Tensor TransformerLayer::FinishInference(const at::Tensor& x, const at::Tensor& context,
                                             at::Tensor out) const {
  const int64_t d = x.size(-1);
  const int64_t rows = x.numel() / std::max<int64_t>(1, d);
  if (!row_blocks_ || rows <= kInferenceChunkRows) return FinishRows(x, context);
  const at::Tensor x_rows = x.reshape({rows, d});
  const at::Tensor context_rows = context.reshape({rows, d});
  out = out.defined() ? out.view({rows, d}) : at::empty_like(x_rows);
  for (int64_t begin = 0; begin < rows; begin += kInferenceChunkRows) {
    const int64_t n = std::min(kInferenceChunkRows, rows - begin);
    out.narrow(0, begin, n)
        .copy_(FinishRows(x_rows.narrow(0, begin, n), context_rows.narrow(0, begin, n)));
  }
  return out.view(x.sizes());
}

at::Tensor TransformerLayer::FinishRows(const at::Tensor& x, const at::Tensor& context) const {
  // Residual add + LayerNorm in one pass, in fp32 (the residual stream) from the GEMM's output,
  // fp32 or bf16; in bf16 the same pass writes the FFN GEMM's bf16 input (fused_cpu_ops.h).
  const at::Tensor h1_low = attention_dtype_ == at::kBFloat16
                                ? at::empty(x.sizes(), x.options().dtype(at::kBFloat16))
                                : at::Tensor();
  const at::Tensor h1 = AddLayerNorm(o_(context), x, ln1_w_, ln1_b_, eps_, h1_low);
  const at::Tensor inner = i_.WithGelu(h1_low.defined() ? h1_low : h1);
  return AddLayerNorm(f_(inner), h1, ln2_w_, ln2_b_, eps_);
}

at::Tensor TransformerLayer::Query(const at::Tensor& x) const {
  return InferencePath() ? q_(x).to(x.scalar_type()) : at::linear(x, q_w_, q_b_);
}
at::Tensor TransformerLayer::Key(const at::Tensor& x) const {
  return InferencePath() ? k_(x).to(x.scalar_type()) : at::linear(x, k_w_, k_b_);
}
at::Tensor TransformerLayer::Value(const at::Tensor& x) const {
  return InferencePath() ? v_(x).to(x.scalar_type()) : at::linear(x, v_w_, v_b_);
}

at::Tensor TransformerLayer::FinishReplacing(at::Tensor x, const at::Tensor& context) const {
  if (!InferencePath() || !x.is_contiguous()) return Finish(x, context);
  return FinishInference(x, context, x);
}

at::Tensor TransformerLayer::QueryKeyValuePart(int part, const at::Tensor& x) const {
  if (!InferencePath()) return part == 0 ? Query(x) : part == 1 ? Key(x) : Value(x);
  const InferenceDense& dense = part == 0 ? q_ : part == 1 ? k_ : v_;
  return dense(x).to(attention_dtype_);
}

at::Tensor TransformerLayer::Finish(const at::Tensor& x, const at::Tensor& context) const {
  if (InferencePath()) return FinishInference(x, context);
  const int64_t d = x.size(-1);
  const at::Tensor h1 =
      at::layer_norm(x + at::linear(context, o_w_, o_b_), {d}, ln1_w_, ln1_b_, eps_);
  const at::Tensor ffn = at::linear(at::gelu(at::linear(h1, i_w_, i_b_)), f_w_, f_b_);
  return at::layer_norm(h1 + ffn, {d}, ln2_w_, ln2_b_, eps_);
}

Embeddings::Embeddings(const TensorMap& w, const ModelConfig& config)
    : eps_(config.layer_norm_eps),
      word_(WeightAt(w, "embeddings.word_embeddings.weight")),
      position_(w.count("embeddings.position_embeddings.weight")
                    ? w.at("embeddings.position_embeddings.weight")
                    : at::Tensor()),
      type_(WeightAt(w, "embeddings.token_type_embeddings.weight")),
      exact_match_(config.exact_match_feature ? WeightAt(w, kExactMatchEmbeddings) : at::Tensor()),
      ln_w_(WeightAt(w, "embeddings.LayerNorm.weight")),
      ln_b_(WeightAt(w, "embeddings.LayerNorm.bias")) {}

at::Tensor Embeddings::Forward(const at::Tensor& ids, const at::Tensor& positions,
                               const at::Tensor& exact_match, const at::Tensor& types) const {
  // Sums in place into the word embeddings' fresh tensor (their gradient needs only the ids): two
  // tensors of the windows' size alive at once, not three (the peak of a long request is here
  // once the layers write over their input). Summed a block of rows at a time, the peak tensors
  // fell further but tcmalloc's resident peak rose (633 -> 896 MiB at 139k tokens): not done.
  at::Tensor e = at::embedding(word_, ids);
  e.add_(types.defined() ? at::embedding(type_, types) : type_[0]);
  if (positions.defined()) e.add_(at::embedding(position_, positions));
  if (exact_match_.defined()) e.add_(at::embedding(exact_match_, exact_match));
  return at::layer_norm(e, {word_.size(1)}, ln_w_, ln_b_, eps_);
}

}  // namespace longqa
