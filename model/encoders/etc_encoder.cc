#include "model/encoders/etc_encoder.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "kernels/etc_score_bias.h"
#include "kernels/ops.h"
#include "model/encoders/bf16_products.h"
#include "model/encoders/fused_cpu_ops.h"
#include "model/encoders/fused_etc_attention.h"
#include "model/encoders/recomputed_in_backward.h"
#include "model/encoders/trainable_ops.h"

namespace longqa {

// Host-built tables of one request, uploaded to the device. None grows with tokens × segments.
struct EtcEncoder::RequestTables {
  int64_t n_g = 0, n_l = 0, block = 0, num_blocks = 0;
  at::Tensor block_index;     // [num_blocks * 3 * block]: long row of every key slot, or -1
  at::Tensor local_labels;    // [block, 3 * block]: l2l label by (query in block, key slot)
  at::Tensor in_radius;       // [block, 3 * block] bool: the pair is within the radius
  at::Tensor g2g_labels;      // [n_g, n_g]
  at::Tensor global_segment;  // [n_g]: segment of a segment token, -1 for CLS and question
  at::Tensor long_segment;    // [num_blocks * block]: segment of a long token, -2 for padding
  // The inference path's membership ranges: a long row's own global row [lo, lo + 1) (its
  // segment token; -1 for padding), a global row's own long rows [lo, hi) (-1 for CLS and
  // question tokens).
  at::Tensor long_own_lo, long_own_hi;      // [num_blocks * block]
  at::Tensor global_own_lo, global_own_hi;  // [n_g]
  // Entity links (etc.entity_globals; undefined and empty without them): a long row's entity
  // token [num_blocks * block] (-1: none, and padding), also on the host (EtcInput::long_entity,
  // for the LibTorch inference form's chunks); and per global row its linked long rows,
  // ascending (mentions [mention_begin[g], mention_begin[g + 1])), for the fused kernels.
  at::Tensor long_entity;
  std::vector<int64_t> host_long_entity;
  // [n_g] bool: the row is an entity token (the hard mask hides its other long keys).
  at::Tensor global_entity;
  at::Tensor mention_begin, mentions;
};

EtcEncoder::EtcEncoder(const ModelConfig& config, const TensorMap& weights, int64_t score_budget,
                       Precision precision)
    : config_(config), score_budget_(score_budget), embeddings_(weights, config) {
  for (int64_t i = 0; i < config.num_layers(); ++i) {
    const std::string s = LayerScope(i) + ".attention.self.";
    Layer layer{TransformerLayer(weights, LayerScope(i), config, precision, /*separate_qkv=*/true),
                {},
                {},
                {},
                {},
                {},
                {},
                WeightAt(weights, s + "relative_key")};
    if (!config.etc.shared_projections) {
      layer.gq_w = WeightAt(weights, s + "global_query.weight");
      layer.gq_b = WeightAt(weights, s + "global_query.bias");
      layer.gk_w = WeightAt(weights, s + "global_key.weight");
      layer.gk_b = WeightAt(weights, s + "global_key.bias");
      layer.gv_w = WeightAt(weights, s + "global_value.weight");
      layer.gv_b = WeightAt(weights, s + "global_value.bias");
    }
    layers_.push_back(std::move(layer));
  }
}

namespace {

// Blocks of long queries, and rows of global queries, a call of the fused CPU attention computes
// between two stop checks.
constexpr int64_t kFusedChunkBlocks = 32;
constexpr int64_t kFusedGlobalRows = 64;

at::Tensor Upload(const std::vector<int64_t>& v, const at::Device& device) {
  return at::tensor(v, at::kLong).to(device);
}

// ETC's "part of" term on the entity links of a score block s [h, rows, cols] (the membership
// kernel gave those pairs "not part of"): s[:, r, c] += qa[:, r, part_of] - qa[:, r, not_part_of]
// for each linked pair (rows[i], cols[i]); qa [h, rows, L].
void AddEntityLinks(at::Tensor s, const at::Tensor& qa, const std::vector<int64_t>& rows,
                    const std::vector<int64_t>& cols, int64_t part_of, int64_t not_part_of) {
  if (rows.empty()) return;
  using at::indexing::Slice;
  const at::Tensor r = Upload(rows, s.device()), c = Upload(cols, s.device());
  const at::Tensor term = qa.index({Slice(), r, part_of}) - qa.index({Slice(), r, not_part_of});
  s.index_put_({Slice(), r, c}, s.index({Slice(), r, c}) + term);
}

// The hard g2l mask on the entity rows of a global-query score block s [h, n_g, keys]: an entity
// token's keys other than its linked ones (rows[i], cols[i]) get kEtcMaskedScore.
void MaskEntityRows(at::Tensor s, const at::Tensor& global_entity, const std::vector<int64_t>& rows,
                    const std::vector<int64_t>& cols) {
  at::Tensor linked = at::zeros({s.size(1), s.size(2)}, global_entity.options());
  if (!rows.empty()) {
    linked.index_put_({Upload(rows, s.device()), Upload(cols, s.device())}, true);
  }
  s.masked_fill_(global_entity.unsqueeze(1).logical_and(linked.logical_not()).unsqueeze(0),
                 kernels::kEtcMaskedScore);
}

// The links of long rows [begin, end) (long_entity: per long row its entity row or -1): their
// long rows minus `long0` and their entity rows, as (long, entity) index lists.
void LinksIn(const std::vector<int64_t>& long_entity, int64_t begin, int64_t end, int64_t long0,
             std::vector<int64_t>* longs, std::vector<int64_t>* globals) {
  longs->clear();
  globals->clear();
  end = std::min(end, static_cast<int64_t>(long_entity.size()));
  for (int64_t l = begin; l < end; ++l) {
    if (long_entity[l] < 0) continue;
    longs->push_back(l - long0);
    globals->push_back(long_entity[l]);
  }
}

// etc.pool_entity_mentions: the batch's entity rows, and each mention's long row with the index
// of its entity among them.
struct EntityPooling {
  std::vector<int64_t> entity_rows, counts, mention_rows, mention_entity;
  at::Tensor entity_rows_t, inverse_counts_t, mention_rows_t, mention_entity_t;
};

// Replaces each entity token's state by the mean of its mentions' states (in place on the
// inference path; out of place, differentiably, on the trainable one).
at::Tensor PoolEntityMentions(at::Tensor xg, const at::Tensor& xl, const EntityPooling& p,
                              bool in_place) {
  if (p.entity_rows.empty()) return xg;
  const at::Tensor sums =
      at::zeros({static_cast<int64_t>(p.entity_rows.size()), xl.size(1)},
                xl.options().dtype(at::kFloat))
          .index_add_(0, p.mention_entity_t, xl.index_select(0, p.mention_rows_t).to(at::kFloat));
  const at::Tensor mean = (sums * p.inverse_counts_t.unsqueeze(1)).to(xg.scalar_type());
  if (in_place) return xg.index_copy_(0, p.entity_rows_t, mean);
  return xg.index_copy(0, p.entity_rows_t, mean);
}

// Membership ranges of one request (RequestTables): segments are contiguous runs of long tokens
// (MakeEtcInput), so a segment token's own long tokens are one range.
void MembershipRanges(const EtcInput& in, int64_t n_pad, std::vector<int64_t>* long_lo,
                      std::vector<int64_t>* long_hi, std::vector<int64_t>* global_lo,
                      std::vector<int64_t>* global_hi) {
  const int64_t n_g = static_cast<int64_t>(in.global_segment.size());
  const int64_t n_l = static_cast<int64_t>(in.long_segment.size());
  int64_t segments = 0;
  for (int64_t s : in.global_segment) segments = std::max(segments, s + 1);
  for (int64_t s : in.long_segment) segments = std::max(segments, s + 1);
  std::vector<int64_t> token_of(segments, -1), first(segments, -1), last(segments, -1),
      count(segments, 0);
  for (int64_t j = 0; j < n_g; ++j) {
    if (in.global_segment[j] >= 0) token_of[in.global_segment[j]] = j;
  }
  long_lo->assign(n_pad, -1);
  long_hi->assign(n_pad, -1);
  for (int64_t l = 0; l < n_l; ++l) {
    const int64_t s = in.long_segment[l];
    if (s < 0) continue;
    if (first[s] < 0) first[s] = l;
    last[s] = l;
    ++count[s];
    if (token_of[s] >= 0) {
      (*long_lo)[l] = token_of[s];
      (*long_hi)[l] = token_of[s] + 1;
    }
  }
  global_lo->assign(n_g, -1);
  global_hi->assign(n_g, -1);
  for (int64_t j = 0; j < n_g; ++j) {
    const int64_t s = in.global_segment[j];
    if (s < 0) continue;
    TORCH_CHECK(count[s] == 0 || last[s] - first[s] + 1 == count[s], "ETC input: segment ", s,
                "'s long tokens are not one contiguous run");
    (*global_lo)[j] = count[s] > 0 ? first[s] : 0;  // an empty segment: an empty range
    (*global_hi)[j] = count[s] > 0 ? last[s] + 1 : 0;
  }
}

// Long keys or values [n_l, h * dh] as head-major rows in a buffer that blocked attention can
// view as overlapping [3 * block, dh] windows: `block` zero rows, then each head's n_pad rows
// (rows past n_l zero), then `block` zero rows. Window (head, i) starts at row
// block + head * n_pad + (i - 1) * block; its slots past a head's ends read zeros or the
// neighbouring head's rows, which the slot table masks. This makes the buffer for n rows, its
// padding zeroed; FillHeadRows writes the rows.
at::Tensor PaddedHeadMajorBuffer(int64_t n, int64_t h, int64_t dh, int64_t n_pad, int64_t block,
                                 const at::TensorOptions& options) {
  at::Tensor buffer = at::empty({h * n_pad + 2 * block, dh}, options);
  buffer.narrow(0, 0, block).zero_();
  buffer.narrow(0, block + h * n_pad, block).zero_();
  buffer.narrow(0, block, h * n_pad).view({h, n_pad, dh}).narrow(1, n, n_pad - n).zero_();
  return buffer;
}

// Rows [begin, begin + m) of such a buffer from x [m, h * dh], times `scale` (in x's dtype,
// before the cast to the buffer's: bf16 rounds once).
void FillHeadRows(const at::Tensor& buffer, int64_t h, int64_t n_pad, int64_t block, int64_t begin,
                  const at::Tensor& x, double scale) {
  const int64_t m = x.size(0), dh = buffer.size(1);
  at::Tensor rows = buffer.narrow(0, block, h * n_pad).view({h, n_pad, dh}).narrow(1, begin, m);
  rows.copy_((scale == 1.0 ? x : x * scale).view({m, h, dh}).permute({1, 0, 2}));
}

// x [n, h * dh] as head-major [h, n, dh] of `dtype`, contiguous, times `scale`.
at::Tensor HeadMajor(const at::Tensor& x, int64_t h, at::ScalarType dtype, double scale = 1.0) {
  const int64_t n = x.size(0), dh = x.size(1) / h;
  const at::Tensor buffer = PaddedHeadMajorBuffer(n, h, dh, n, 0, x.options().dtype(dtype));
  FillHeadRows(buffer, h, n, 0, 0, x, scale);
  return buffer.view({h, n, dh});
}

// The long rows' q, k or v (QueryKeyValuePart) in a padded head-major buffer of `dtype`, made a
// row block at a time on the CPU, so that only a block of the [n, d] projection exists beside
// the buffer (peak memory a token, issue 22); in one GEMM on a GPU.
at::Tensor ProjectedHeadMajor(const TransformerLayer& layer, int part, const at::Tensor& x,
                              int64_t h, int64_t n_pad, int64_t block, at::ScalarType dtype,
                              double scale = 1.0) {
  const int64_t n = x.size(0), dh = x.size(1) / h;
  at::Tensor buffer = PaddedHeadMajorBuffer(n, h, dh, n_pad, block, x.options().dtype(dtype));
  const int64_t chunk = x.is_cpu() ? kInferenceChunkRows : std::max<int64_t>(1, n);
  for (int64_t begin = 0; begin < n; begin += chunk) {
    const int64_t m = std::min(chunk, n - begin);
    FillHeadRows(buffer, h, n_pad, block, begin,
                 layer.QueryKeyValuePart(part, x.narrow(0, begin, m)), scale);
  }
  return buffer;
}

// The overlapping windows of blocks [b0, b0 + blocks) of one head: [blocks, 3 * block, dh].
at::Tensor BlockWindows(const at::Tensor& buffer, int64_t head, int64_t n_pad, int64_t block,
                        int64_t b0, int64_t blocks) {
  const int64_t dh = buffer.size(1);
  return buffer.as_strided(
      {blocks, 3 * block, dh}, {block * dh, dh, 1},
      buffer.storage_offset() + (block + head * n_pad + (b0 - 1) * block) * dh);
}

}  // namespace

at::Tensor EtcEncoder::GlobalProjection(const Layer& layer, int part, const at::Tensor& xg) const {
  if (config_.etc.shared_projections) return layer.base.QueryKeyValuePart(part, xg);
  const at::Tensor& w = part == 0 ? layer.gq_w : part == 1 ? layer.gk_w : layer.gv_w;
  const at::Tensor& bias = part == 0 ? layer.gq_b : part == 1 ? layer.gk_b : layer.gv_b;
  return at::linear(xg, w, bias);
}

std::pair<at::Tensor, at::Tensor> EtcEncoder::Attend(const Layer& layer, const at::Tensor& qg,
                                                     const at::Tensor& kg, const at::Tensor& vg,
                                                     const at::Tensor& ql, const at::Tensor& kl,
                                                     const at::Tensor& vl, const RequestTables& t,
                                                     const StopCheck& stop) const {
  const int64_t h = config_.num_heads, dh = config_.head_dim(), d = config_.hidden_size;
  const int64_t labels = EtcNumLabels(config_);
  const int64_t part_of = EtcPartOfLabel(config_), not_part_of = EtcNotPartOfLabel(config_);
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  const at::Tensor rel = layer.relative_key.view({labels, h, dh}).permute({1, 2, 0});  // [h,dh,L]
  auto heads = [&](const at::Tensor& x) { return x.view({x.size(0), h, dh}); };        // [n, h, dh]
  // q · a_K for every query and label, as [n, h, L] for relative_label_gather.
  auto label_scores = [&](const at::Tensor& q) {
    return at::matmul(heads(q).permute({1, 0, 2}), rel).permute({1, 0, 2}).contiguous();
  };
  // The "part of" / "not part of" term between queries and the other input's tokens: not-part-of
  // everywhere, plus the difference where the segments agree ([rows, h, cols]).
  auto membership = [&](const at::Tensor& qa, const at::Tensor& own) {
    const at::Tensor outside = qa.select(2, not_part_of).unsqueeze(2);
    return outside + own.unsqueeze(1) * (qa.select(2, part_of).unsqueeze(2) - outside);
  };

  // Global queries: one softmax over g2g and g2l keys, a chunk of global rows at a time.
  const at::Tensor key_heads = heads(at::cat({kg, kl})).permute({1, 2, 0});    // [h, dh, keys]
  const at::Tensor value_heads = heads(at::cat({vg, vl})).permute({1, 0, 2});  // [h, keys, dh]
  const at::Tensor long_segment = t.long_segment.narrow(0, 0, t.n_l);
  const int64_t g_rows = std::max<int64_t>(1, score_budget_ / (h * (t.n_g + t.n_l)));
  std::vector<at::Tensor> g_context;
  for (int64_t g0 = 0; g0 < t.n_g; g0 += g_rows) {
    const int64_t rows = std::min(g_rows, t.n_g - g0);
    const at::Tensor q = qg.narrow(0, g0, rows);
    const at::Tensor qa = label_scores(q);
    const at::Tensor segment = t.global_segment.narrow(0, g0, rows).unsqueeze(1);
    at::Tensor own = segment.eq(long_segment.unsqueeze(0));  // [rows, n_l]
    if (t.long_entity.defined()) {                           // and each entity token its mentions
      own = own.logical_or(t.long_entity.narrow(0, 0, t.n_l)
                               .unsqueeze(0)
                               .eq(at::arange(g0, g0 + rows, long_segment.options()).unsqueeze(1)));
    }
    const at::Tensor g2g =
        RelativeLabelGatherTrainable(qa, t.g2g_labels.narrow(0, g0, rows).contiguous());
    at::Tensor scores = at::matmul(heads(q).permute({1, 0, 2}), key_heads) +
                        at::cat({g2g, membership(qa, own)}, 2).permute({1, 0, 2});
    scores.mul_(scale);
    if (config_.etc.hard_g2l_mask) {
      // A segment token sees only its own segment's long tokens, an entity token its mentions
      // (and both every global token).
      at::Tensor linked = segment.ge(0);
      if (t.global_entity.defined()) {
        linked = linked.logical_or(t.global_entity.narrow(0, g0, rows).unsqueeze(1));
      }
      const at::Tensor hidden = linked.logical_and(own.logical_not());
      scores.masked_fill_(at::cat({at::zeros({rows, t.n_g}, hidden.options()), hidden}, 1), -1e30);
    }
    g_context.push_back(
        at::matmul(at::softmax(scores, -1), value_heads).permute({1, 0, 2}).reshape({rows, d}));
  }

  // Long queries, in blocks of r+1: one softmax over l2g keys and the three neighbouring blocks,
  // a chunk of blocks at a time.
  const int64_t b = t.block, nb = t.num_blocks, n_pad = nb * b;
  const at::Tensor ql_pad = at::constant_pad_nd(ql, {0, 0, 0, n_pad - t.n_l});
  const at::Tensor kg_heads = heads(kg).permute({1, 2, 0});  // [h, dh, n_g]
  const at::Tensor vg_heads = heads(vg).permute({1, 0, 2});  // [h, n_g, dh]
  const int64_t chunk_blocks = std::max<int64_t>(1, score_budget_ / (h * b * (t.n_g + 3 * b)));
  std::vector<at::Tensor> l_context;
  for (int64_t b0 = 0; b0 < nb; b0 += chunk_blocks) {
    StopIfAsked(stop);
    const int64_t blocks = std::min(chunk_blocks, nb - b0), rows = blocks * b;
    const at::Tensor q = ql_pad.narrow(0, b0 * b, rows);
    const at::Tensor qa = label_scores(q);
    const at::Tensor slots = t.block_index.narrow(0, b0 * 3 * b, blocks * 3 * b);
    const at::Tensor q_blocks = heads(q).view({blocks, b, h, dh}).permute({0, 2, 1, 3});
    const at::Tensor k_blocks =
        GatherRowsTrainable(kl, slots).view({blocks, 3 * b, h, dh}).permute({0, 2, 3, 1});
    const at::Tensor v_blocks =
        GatherRowsTrainable(vl, slots).view({blocks, 3 * b, h, dh}).permute({0, 2, 1, 3});
    const at::Tensor valid =
        t.in_radius.unsqueeze(0).logical_and(slots.view({blocks, 1, 3 * b}).ge(0)).unsqueeze(1);
    const at::Tensor local =
        (at::matmul(q_blocks, k_blocks) + RelativeLabelGatherTrainable(qa, t.local_labels)
                                              .view({blocks, b, h, 3 * b})
                                              .permute({0, 2, 1, 3}))
            .masked_fill(valid.logical_not(), -1e30);
    at::Tensor own =
        t.long_segment.narrow(0, b0 * b, rows).unsqueeze(1).eq(t.global_segment.unsqueeze(0));
    if (t.long_entity.defined()) {  // a mention is part of its entity token too
      own = own.logical_or(t.long_entity.narrow(0, b0 * b, rows)
                               .unsqueeze(1)
                               .eq(at::arange(t.n_g, t.long_entity.options()).unsqueeze(0)));
    }
    const at::Tensor to_global =
        at::matmul(heads(q).permute({1, 0, 2}), kg_heads)
            .view({h, blocks, b, t.n_g})
            .permute({1, 0, 2, 3}) +
        membership(qa, own).view({blocks, b, h, t.n_g}).permute({0, 2, 1, 3});
    const at::Tensor p = at::softmax(at::cat({to_global, local}, -1).mul_(scale), -1);
    l_context.push_back((at::matmul(p.narrow(-1, 0, t.n_g), vg_heads) +
                         at::matmul(p.narrow(-1, t.n_g, 3 * b), v_blocks))
                            .permute({0, 2, 1, 3})
                            .reshape({rows, d}));
  }
  return {at::cat(g_context), at::cat(l_context).narrow(0, 0, t.n_l)};
}

void EtcEncoder::AttendInference(const Layer& layer, const at::Tensor& xg, const at::Tensor& xl,
                                 const RequestTables& t, const StopCheck& stop, at::Tensor g_out,
                                 at::Tensor l_out) const {
  const int64_t h = config_.num_heads, dh = config_.head_dim();
  const int64_t labels = EtcNumLabels(config_);
  const int64_t part_of = EtcPartOfLabel(config_), not_part_of = EtcNotPartOfLabel(config_);
  const int64_t n_g = t.n_g, n_l = t.n_l, b = t.block, nb = t.num_blocks, n_pad = nb * b;
  const int64_t budget = std::min(score_budget_, EtcInferenceChunkScores(xl.is_cpu()));
  // Queries carry the 1/sqrt(dh) scale, so every score term computed from them (q·k and the
  // label scores q·a_K) is scaled once.
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  // The GEMMs and the score chunks run in the layer's attention dtype (bf16 for kBf16, as the
  // sliding-window layers do); the global queries' running softmax sums stay fp32.
  // int8 layers hand the fused AVX-512 kernels their heads in bf16 (dot products, as the window
  // layers' attention); the contexts stay fp32.
  const bool bf16_heads = layer.base.bf16_attention_products() &&
                          cpu_attention_ == EtcCpuAttention::kFused &&
                          FusedEtcAttentionTakesBf16Heads(dh);
  const at::ScalarType dtype = bf16_heads ? at::kBFloat16 : layer.base.attention_dtype();
  const at::Tensor rel =
      layer.relative_key.to(dtype).view({labels, h, dh}).permute({1, 2, 0});  // [h, dh, L]
  // The fused CPU kernels' form: fp32 [h, L, dh].
  const at::Tensor relative_keys =
      layer.relative_key.view({labels, h, dh}).permute({1, 0, 2}).contiguous();
  // The global rows' q, k, v (few rows), then the long rows' one at a time: each projection
  // is let go once its head-major copy is made (peak memory a token, issue 22).
  const at::Tensor qg_h =
      HeadMajor(GlobalProjection(layer, 0, xg), h, dtype, scale);  // [h, n_g, dh]
  const at::Tensor kg_h = HeadMajor(GlobalProjection(layer, 1, xg), h, dtype);
  const at::Tensor vg_h = HeadMajor(GlobalProjection(layer, 2, xg), h, dtype);
  const at::Tensor kl_buffer = ProjectedHeadMajor(layer.base, 1, xl, h, n_pad, b, dtype);
  const at::Tensor vl_buffer = ProjectedHeadMajor(layer.base, 2, xl, h, n_pad, b, dtype);
  auto long_heads = [&](const at::Tensor& buffer) {  // [h, n_l, dh]
    return buffer.narrow(0, b, h * n_pad).view({h, n_pad, dh}).narrow(1, 0, n_l);
  };

  // Global queries: on AVX-512 and AVX2 CPUs in one fused pass per (head, group of rows)
  // (fused_etc_attention.h); elsewhere in LibTorch, as follows.
  EtcGlobalAttentionInputs global;
  global.queries = qg_h;
  global.global_keys = kg_h;
  global.global_values = vg_h;
  global.long_keys = kl_buffer;
  global.long_values = vl_buffer;
  global.relative_keys = relative_keys;
  global.g2g_labels = t.g2g_labels;
  global.own_lo = t.global_own_lo;
  global.own_hi = t.global_own_hi;
  global.part_of = part_of;
  global.not_part_of = not_part_of;
  global.mask_outside = config_.etc.hard_g2l_mask;
  global.mention_begin = t.mention_begin;
  global.mentions = t.mentions;
  global.block = b;
  global.n_l = n_l;
  const bool fused = cpu_attention_ != EtcCpuAttention::kLibTorch;
  const EtcKernelIsa isa =
      cpu_attention_ == EtcCpuAttention::kFusedAvx2 ? EtcKernelIsa::kAvx2 : EtcKernelIsa::kAuto;
  if (fused && FusedEtcGlobalAttentionApplies(global, isa)) {
    for (int64_t r0 = 0; r0 < n_g; r0 += kFusedGlobalRows) {
      StopIfAsked(stop);
      FusedEtcGlobalAttention(global, r0, std::min(kFusedGlobalRows, n_g - r0), g_out, isa);
    }
  } else {
    // Global queries: g2g keys first, then the long keys a chunk at a time with a running
    // maximum, normaliser and weighted sum (online softmax): exact, and nothing [n_g, n_l] held.
    const at::Tensor qa_g = at::bmm(qg_h, rel);  // [h, n_g, L]
    at::Tensor scores = at::bmm(qg_h, kg_h.transpose(1, 2));
    kernels::EtcLabelBias(scores, qa_g, t.g2g_labels, 0, at::Tensor());
    at::Tensor top = scores.amax(-1, /*keepdim=*/true);  // [h, n_g, 1]
    scores.sub_(top).exp_();
    at::Tensor total = scores.sum(-1, /*keepdim=*/true, at::kFloat);
    at::Tensor g_acc = Bf16SafeBmm(scores, vg_h).to(at::kFloat);  // [h, n_g, dh]
    const at::Tensor k_long = long_heads(kl_buffer), v_long = long_heads(vl_buffer);
    const int64_t key_chunk = std::max<int64_t>(1, budget / (h * std::max<int64_t>(1, n_g)));
    std::vector<int64_t> link_keys, link_rows;
    for (int64_t c0 = 0; c0 < n_l; c0 += key_chunk) {
      StopIfAsked(stop);
      const int64_t keys = std::min(key_chunk, n_l - c0);
      const at::Tensor kc = k_long.narrow(1, c0, keys), vc = v_long.narrow(1, c0, keys);
      at::Tensor s = at::bmm(qg_h, kc.transpose(1, 2));  // [h, n_g, keys]
      kernels::EtcMembershipBias(s, qa_g, part_of, not_part_of, t.global_own_lo, t.global_own_hi,
                                 c0, config_.etc.hard_g2l_mask);
      LinksIn(t.host_long_entity, c0, c0 + keys, c0, &link_keys, &link_rows);
      AddEntityLinks(s, qa_g, link_rows, link_keys, part_of, not_part_of);
      if (config_.etc.hard_g2l_mask && t.global_entity.defined()) {
        MaskEntityRows(s, t.global_entity, link_rows, link_keys);
      }
      const at::Tensor new_top = at::maximum(top, s.amax(-1, /*keepdim=*/true));
      const at::Tensor rescale = (top.to(at::kFloat) - new_top.to(at::kFloat)).exp_();
      s.sub_(new_top).exp_();
      total.mul_(rescale).add_(s.sum(-1, /*keepdim=*/true, at::kFloat));
      g_acc.mul_(rescale);
      if (dtype == at::kFloat) {
        g_acc.baddbmm_(s, vc);
      } else {
        g_acc.add_(Bf16SafeBmm(s, vc));  // bf16 products summed into the fp32 accumulator
      }
      top = new_top;
    }
    g_out.view({n_g, h, dh}).copy_(g_acc.div_(total).permute({1, 0, 2}));
  }

  // Long queries: on AVX-512 and AVX2 CPUs in one fused pass per (head, block); elsewhere a chunk
  // of blocks at a time in LibTorch, scores [h, rows, n_g + 3b], the global keys' columns first,
  // then the block's three neighbouring blocks.
  const at::Tensor ql_h =
      ProjectedHeadMajor(layer.base, 0, xl, h, n_pad, 0, dtype, scale).view({h, n_pad, dh});
  EtcLongAttentionInputs local;
  local.queries = ql_h;
  local.global_keys = kg_h;
  local.global_values = vg_h;
  local.long_keys = kl_buffer;
  local.long_values = vl_buffer;
  local.relative_keys = relative_keys;
  local.own_lo = t.long_own_lo;
  local.own_hi = t.long_own_hi;
  local.part_of = part_of;
  local.not_part_of = not_part_of;
  local.long_entity = t.long_entity;
  local.local_labels = t.local_labels;
  local.block_index = t.block_index;
  local.block = b;
  local.n_l = n_l;
  if (fused && FusedEtcLongAttentionApplies(local, isa)) {
    for (int64_t b0 = 0; b0 < nb; b0 += kFusedChunkBlocks) {
      StopIfAsked(stop);
      FusedEtcLongAttention(local, b0, std::min(kFusedChunkBlocks, nb - b0), l_out, isa);
    }
  } else {
    const int64_t cols = n_g + 3 * b;
    const int64_t chunk_blocks = std::max<int64_t>(1, budget / (h * b * cols));
    std::vector<int64_t> link_queries, link_columns;
    for (int64_t b0 = 0; b0 < nb; b0 += chunk_blocks) {
      StopIfAsked(stop);
      const int64_t blocks = std::min(chunk_blocks, nb - b0), rows = blocks * b;
      const at::Tensor q = ql_h.narrow(1, b0 * b, rows);  // [h, rows, dh]
      const at::Tensor qa = at::bmm(q, rel);              // [h, rows, L]
      at::Tensor s = at::empty({h, rows, cols}, ql_h.options());
      at::Tensor s_global = s.narrow(2, 0, n_g), s_local = s.narrow(2, n_g, 3 * b);
      at::bmm_out(s_global, q, kg_h.transpose(1, 2));
      for (int64_t head = 0; head < h; ++head) {
        at::Tensor s_head = s_local[head].view({blocks, b, 3 * b});
        at::bmm_out(s_head, q[head].view({blocks, b, dh}),
                    BlockWindows(kl_buffer, head, n_pad, b, b0, blocks).transpose(1, 2));
      }
      kernels::EtcMembershipBias(s_global, qa, part_of, not_part_of,
                                 t.long_own_lo.narrow(0, b0 * b, rows),
                                 t.long_own_hi.narrow(0, b0 * b, rows), 0, false);
      LinksIn(t.host_long_entity, b0 * b, b0 * b + rows, b0 * b, &link_queries, &link_columns);
      AddEntityLinks(s_global, qa, link_queries, link_columns, part_of, not_part_of);
      kernels::EtcLabelBias(s_local, qa, t.local_labels, b0 * b, t.block_index);
      const at::Tensor p = SoftmaxLastDimInPlace(s);  // a new p beside s held twice the chunk
      at::Tensor out = Bf16SafeBmm(p.narrow(2, 0, n_g), vg_h);  // [h, rows, dh]
      for (int64_t head = 0; head < h; ++head) {
        at::Tensor out_head = out[head].view({blocks, b, dh});
        Bf16SafeBaddbmm_(out_head, p[head].narrow(1, n_g, 3 * b).view({blocks, b, 3 * b}),
                         BlockWindows(vl_buffer, head, n_pad, b, b0, blocks));
      }
      const int64_t kept = std::min(rows, n_l - b0 * b);  // the last block's padding rows: not kept
      l_out.narrow(0, b0 * b, kept)
          .view({kept, h, dh})
          .copy_(out.permute({1, 0, 2}).narrow(0, 0, kept));
    }
  }
}

EtcOutput EtcEncoder::Forward(const std::vector<EtcInput>& inputs, const at::Device& device,
                              const StopCheck& stop) const {
  EtcOutput out;
  out.global_begin.assign(inputs.size() + 1, 0);
  out.long_begin.assign(inputs.size() + 1, 0);
  std::vector<int64_t> global_ids, long_ids, long_match, global_positions, long_positions;
  const bool positions = config_.etc.positions != "none";
  std::vector<RequestTables> tables(inputs.size());
  EntityPooling pooling;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const EtcInput& in = inputs[i];
    RequestTables& t = tables[i];
    const EtcRequestPlan plan = PlanEtcRequest(config_, in);
    t.n_g = plan.n_g;
    t.n_l = plan.n_l;
    t.block = plan.block;
    t.num_blocks = plan.num_blocks;
    const int64_t b = t.block, nb = t.num_blocks, n_pad = nb * b;
    out.global_begin[i + 1] = out.global_begin[i] + t.n_g;
    out.long_begin[i + 1] = out.long_begin[i] + t.n_l;
    global_ids.insert(global_ids.end(), in.global_ids.begin(), in.global_ids.end());
    long_ids.insert(long_ids.end(), in.long_ids.begin(), in.long_ids.end());
    if (config_.exact_match_feature) {
      if (in.long_match.empty()) {
        long_match.resize(long_match.size() + in.long_ids.size(), 0);
      } else {
        long_match.insert(long_match.end(), in.long_match.begin(), in.long_match.end());
      }
    }

    t.block_index = Upload(plan.block_index, device);
    t.local_labels = Upload(plan.local_labels, device).view({b, 3 * b});
    t.in_radius = t.local_labels.ge(0);
    t.g2g_labels = Upload(plan.g2g_labels, device).view({t.n_g, t.n_g});
    t.global_segment = Upload(in.global_segment, device);
    std::vector<int64_t> long_segment = in.long_segment;
    long_segment.resize(n_pad, -2);
    t.long_segment = Upload(long_segment, device);
    std::vector<int64_t> long_lo, long_hi, global_lo, global_hi;
    MembershipRanges(in, n_pad, &long_lo, &long_hi, &global_lo, &global_hi);
    t.long_own_lo = Upload(long_lo, device);
    t.long_own_hi = Upload(long_hi, device);
    t.global_own_lo = Upload(global_lo, device);
    t.global_own_hi = Upload(global_hi, device);
    if (!in.long_entity.empty()) {
      t.host_long_entity = in.long_entity;
      std::vector<int64_t> long_entity = in.long_entity;
      long_entity.resize(n_pad, -1);
      t.long_entity = Upload(long_entity, device);
      std::vector<int64_t> begin(t.n_g + 1, 0);
      for (int64_t l = 0; l < t.n_l; ++l) {
        const int64_t g = in.long_entity[l];
        if (g < 0) continue;
        TORCH_CHECK(g < t.n_g && in.global_segment[g] < 0, "ETC input: long token ", l,
                    " names global row ", g, ", which is no entity token");
        ++begin[g + 1];
      }
      for (int64_t g = 0; g < t.n_g; ++g) begin[g + 1] += begin[g];
      std::vector<int64_t> mentions(begin[t.n_g]), next(begin.begin(), begin.end() - 1);
      for (int64_t l = 0; l < t.n_l; ++l) {  // long rows ascending per entity
        if (in.long_entity[l] >= 0) mentions[next[in.long_entity[l]]++] = l;
      }
      if (config_.etc.pool_entity_mentions) {
        for (int64_t g = 0; g < t.n_g; ++g) {
          if (begin[g + 1] == begin[g]) continue;
          const int64_t e = static_cast<int64_t>(pooling.entity_rows.size());
          pooling.entity_rows.push_back(out.global_begin[i] + g);
          pooling.counts.push_back(begin[g + 1] - begin[g]);
          for (int64_t m = begin[g]; m < begin[g + 1]; ++m) {
            pooling.mention_rows.push_back(out.long_begin[i] + mentions[m]);
            pooling.mention_entity.push_back(e);
          }
        }
      }
      t.mention_begin = Upload(begin, device);
      t.global_entity = t.mention_begin.narrow(0, 1, t.n_g).gt(t.mention_begin.narrow(0, 0, t.n_g));
      t.mentions = Upload(mentions, device);
    }
    if (positions) {
      global_positions.insert(global_positions.end(), in.global_positions.begin(),
                              in.global_positions.end());
      long_positions.insert(long_positions.end(), in.long_positions.begin(),
                            in.long_positions.end());
    }
  }

  const at::Tensor none;
  // Exact-match flags only for models with the feature (global tokens never match).
  const bool match = config_.exact_match_feature;
  const at::Tensor global_ids_t = Upload(global_ids, device).unsqueeze(0);
  at::Tensor xg =
      embeddings_
          .Forward(global_ids_t, positions ? Upload(global_positions, device).unsqueeze(0) : none,
                   match ? at::zeros_like(global_ids_t) : none)
          .squeeze(0);
  at::Tensor xl = embeddings_
                      .Forward(Upload(long_ids, device).unsqueeze(0),
                               positions ? Upload(long_positions, device).unsqueeze(0) : none,
                               match ? Upload(long_match, device).unsqueeze(0) : none)
                      .squeeze(0);
  if (!pooling.entity_rows.empty()) {
    pooling.entity_rows_t = Upload(pooling.entity_rows, device);
    pooling.mention_rows_t = Upload(pooling.mention_rows, device);
    pooling.mention_entity_t = Upload(pooling.mention_entity, device);
    pooling.inverse_counts_t = Upload(pooling.counts, device).to(at::kFloat).reciprocal();
  }
  // Autograd off: the blocked inference attention (no backward of its in-place kernels needed).
  const bool inference = !at::GradMode::is_enabled();
  for (const Layer& layer : layers_) {
    StopIfAsked(stop);
    xg = PoolEntityMentions(std::move(xg), xl, pooling, inference);
    if (inference) {
      // Each request's contexts written into one tensor each, and the layer's output over its
      // input: with q, k, v made one at a time the long rows are held about 5 times at the
      // peak (input, three head-major copies, context), where they were 8 (issue 22).
      const int64_t d = config_.hidden_size;
      at::Tensor g_context = at::empty({xg.size(0), d}, xg.options());
      at::Tensor l_context =
          at::empty({xl.size(0), d}, xl.options().dtype(layer.base.attention_dtype()));
      for (size_t i = 0; i < inputs.size(); ++i) {
        const int64_t gb = out.global_begin[i], lb = out.long_begin[i];
        const RequestTables& t = tables[i];
        AttendInference(layer, xg.narrow(0, gb, t.n_g), xl.narrow(0, lb, t.n_l), t, stop,
                        g_context.narrow(0, gb, t.n_g), l_context.narrow(0, lb, t.n_l));
      }
      xg = layer.base.FinishReplacing(std::move(xg), g_context);
      xl = layer.base.FinishReplacing(std::move(xl), l_context);
      continue;
    }
    // The trainable layer: {xg, xl} -> {xg', xl'}. It owns copies of what it reads (tensors
    // shared, not copied): with recompute_layers it runs again in backward, after Forward.
    RecomputableFunction trainable = [this, &layer, tables, global_begin = out.global_begin,
                                      long_begin = out.long_begin,
                                      stop](const std::vector<at::Tensor>& x) {
      const at::Tensor &xg_in = x[0], &xl_in = x[1];
      const at::Tensor qg = GlobalProjection(layer, 0, xg_in),
                       kg = GlobalProjection(layer, 1, xg_in),
                       vg = GlobalProjection(layer, 2, xg_in);
      const at::Tensor ql = layer.base.QueryKeyValuePart(0, xl_in),
                       kl = layer.base.QueryKeyValuePart(1, xl_in),
                       vl = layer.base.QueryKeyValuePart(2, xl_in);
      std::vector<at::Tensor> g_context, l_context;
      for (size_t i = 0; i < tables.size(); ++i) {
        const int64_t gb = global_begin[i], lb = long_begin[i];
        const RequestTables& t = tables[i];
        auto [gc, lc] = Attend(layer, qg.narrow(0, gb, t.n_g), kg.narrow(0, gb, t.n_g),
                               vg.narrow(0, gb, t.n_g), ql.narrow(0, lb, t.n_l),
                               kl.narrow(0, lb, t.n_l), vl.narrow(0, lb, t.n_l), t, stop);
        g_context.push_back(gc);
        l_context.push_back(lc);
      }
      return std::vector<at::Tensor>{layer.base.Finish(xg_in, at::cat(g_context)),
                                     layer.base.Finish(xl_in, at::cat(l_context))};
    };
    std::vector<at::Tensor> next =
        recompute_layers_ ? RecomputedInBackward(trainable, {xg, xl}) : trainable({xg, xl});
    xg = std::move(next[0]);
    xl = std::move(next[1]);
  }
  out.global_states = xg;
  out.long_states = xl;
  return out;
}

}  // namespace longqa
