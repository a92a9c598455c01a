#include "model/encoders/etc_encoder.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

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
};

EtcEncoder::EtcEncoder(const ModelConfig& config, const TensorMap& weights, int64_t score_budget,
                       Precision precision)
    : config_(config), score_budget_(score_budget), embeddings_(weights, config) {
  for (int64_t i = 0; i < config.num_layers(); ++i) {
    const std::string s = LayerScope(i) + ".attention.self.";
    Layer layer{TransformerLayer(weights, LayerScope(i), config, precision),
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

at::Tensor Upload(const std::vector<int64_t>& v, const at::Device& device) {
  return at::tensor(v, at::kLong).to(device);
}

}  // namespace

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
    const at::Tensor own = segment.eq(long_segment.unsqueeze(0));  // [rows, n_l]
    const at::Tensor g2g =
        RelativeLabelGatherTrainable(qa, t.g2g_labels.narrow(0, g0, rows).contiguous());
    at::Tensor scores = at::matmul(heads(q).permute({1, 0, 2}), key_heads) +
                        at::cat({g2g, membership(qa, own)}, 2).permute({1, 0, 2});
    scores.mul_(scale);
    if (config_.etc.hard_g2l_mask) {
      // A segment token sees only its own segment's long tokens (and every global token).
      const at::Tensor hidden = segment.ge(0).logical_and(own.logical_not());
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
    const at::Tensor own =
        t.long_segment.narrow(0, b0 * b, rows).unsqueeze(1).eq(t.global_segment.unsqueeze(0));
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

EtcOutput EtcEncoder::Forward(const std::vector<EtcInput>& inputs, const at::Device& device,
                              const StopCheck& stop) const {
  EtcOutput out;
  out.global_begin.assign(inputs.size() + 1, 0);
  out.long_begin.assign(inputs.size() + 1, 0);
  std::vector<int64_t> global_ids, long_ids, long_match, global_positions, long_positions;
  const bool positions = config_.etc.positions != "none";
  std::vector<RequestTables> tables(inputs.size());
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
  for (const Layer& layer : layers_) {
    StopIfAsked(stop);
    const bool shared = config_.etc.shared_projections;
    const at::Tensor qg = shared ? layer.base.Query(xg) : at::linear(xg, layer.gq_w, layer.gq_b);
    const at::Tensor kg = shared ? layer.base.Key(xg) : at::linear(xg, layer.gk_w, layer.gk_b);
    const at::Tensor vg = shared ? layer.base.Value(xg) : at::linear(xg, layer.gv_w, layer.gv_b);
    const at::Tensor ql = layer.base.Query(xl), kl = layer.base.Key(xl), vl = layer.base.Value(xl);
    std::vector<at::Tensor> g_context, l_context;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const int64_t gb = out.global_begin[i], lb = out.long_begin[i];
      const RequestTables& t = tables[i];
      auto [gc, lc] = Attend(layer, qg.narrow(0, gb, t.n_g), kg.narrow(0, gb, t.n_g),
                             vg.narrow(0, gb, t.n_g), ql.narrow(0, lb, t.n_l),
                             kl.narrow(0, lb, t.n_l), vl.narrow(0, lb, t.n_l), t, stop);
      g_context.push_back(gc);
      l_context.push_back(lc);
    }
    xg = layer.base.Finish(xg, at::cat(g_context));
    xl = layer.base.Finish(xl, at::cat(l_context));
  }
  out.global_states = xg;
  out.long_states = xl;
  return out;
}

}  // namespace longqa
