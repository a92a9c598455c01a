#include "model/encoders/etc_encoder.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "model/encoders/trainable_ops.h"

namespace longqa {

// Host-built index and label tables of one request, uploaded to the device.
struct EtcEncoder::RequestTables {
  int64_t n_g = 0, n_l = 0, block = 0, num_blocks = 0;
  at::Tensor block_index;    // [num_blocks * 3 * block]: long row of every key slot, or -1
  at::Tensor local_labels;   // [block, 3 * block]: l2l label by (query in block, key slot)
  at::Tensor local_valid;    // [num_blocks, 1, block, 3 * block] bool
  at::Tensor l2g_labels;     // [num_blocks * block, n_g]
  at::Tensor global_labels;  // [n_g, n_g + n_l]: g2g then g2l
  at::Tensor global_valid;   // [1, n_g, n_g + n_l] bool
};

EtcEncoder::EtcEncoder(const ModelConfig& config, const TensorMap& weights)
    : config_(config), embeddings_(weights, config) {
  for (int64_t i = 0; i < config.num_layers(); ++i) {
    const std::string s = LayerScope(i) + ".attention.self.";
    Layer layer{TransformerLayer(weights, LayerScope(i), config),
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
                                                     const at::Tensor& vl,
                                                     const RequestTables& t) const {
  const int64_t h = config_.num_heads, dh = config_.head_dim(), d = config_.hidden_size;
  const int64_t labels = EtcNumLabels(config_);
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  const at::Tensor rel = layer.relative_key.view({labels, h, dh}).permute({1, 2, 0});  // [h,dh,L]
  auto heads = [&](const at::Tensor& x) { return x.view({x.size(0), h, dh}); };        // [n, h, dh]
  // q · a_K for every query and label, as [n, h, L] for relative_label_gather.
  auto label_scores = [&](const at::Tensor& q) {
    return at::matmul(heads(q).permute({1, 0, 2}), rel).permute({1, 0, 2}).contiguous();
  };

  // Global queries: one softmax over g2g and g2l keys.
  const at::Tensor keys = at::cat({kg, kl});
  const at::Tensor values = at::cat({vg, vl});
  at::Tensor g_scores = at::matmul(heads(qg).permute({1, 0, 2}), heads(keys).permute({1, 2, 0}));
  g_scores += RelativeLabelGatherTrainable(label_scores(qg), t.global_labels).permute({1, 0, 2});
  g_scores.mul_(scale).masked_fill_(t.global_valid.logical_not(), -1e30);
  const at::Tensor g_context =
      at::matmul(at::softmax(g_scores, -1), heads(values).permute({1, 0, 2}))
          .permute({1, 0, 2})
          .reshape({t.n_g, d});

  // Long queries, in blocks of r+1: one softmax over l2g keys and the three neighbouring blocks.
  const int64_t b = t.block, nb = t.num_blocks, n_pad = nb * b;
  const at::Tensor ql_pad = at::constant_pad_nd(ql, {0, 0, 0, n_pad - t.n_l});
  const at::Tensor qa = label_scores(ql_pad);
  const at::Tensor q_blocks = heads(ql_pad).view({nb, b, h, dh}).permute({0, 2, 1, 3});
  const at::Tensor k_blocks =
      GatherRowsTrainable(kl, t.block_index).view({nb, 3 * b, h, dh}).permute({0, 2, 3, 1});
  const at::Tensor v_blocks =
      GatherRowsTrainable(vl, t.block_index).view({nb, 3 * b, h, dh}).permute({0, 2, 1, 3});
  const at::Tensor local =
      at::matmul(q_blocks, k_blocks) + RelativeLabelGatherTrainable(qa, t.local_labels)
                                           .view({nb, b, h, 3 * b})
                                           .permute({0, 2, 1, 3});
  const at::Tensor to_global =
      at::matmul(heads(ql_pad).permute({1, 0, 2}), heads(kg).permute({1, 2, 0}))
          .view({h, nb, b, t.n_g})
          .permute({1, 0, 2, 3}) +
      RelativeLabelGatherTrainable(qa, t.l2g_labels).view({nb, b, h, t.n_g}).permute({0, 2, 1, 3});
  at::Tensor l_scores =
      at::cat({to_global, local.masked_fill(t.local_valid.logical_not(), -1e30)}, -1);
  const at::Tensor p = at::softmax(l_scores.mul_(scale), -1);
  const at::Tensor l_context = (at::matmul(p.narrow(-1, 0, t.n_g), heads(vg).permute({1, 0, 2})) +
                                at::matmul(p.narrow(-1, t.n_g, 3 * b), v_blocks))
                                   .permute({0, 2, 1, 3})
                                   .reshape({n_pad, d})
                                   .narrow(0, 0, t.n_l);
  return {g_context, l_context};
}

EtcOutput EtcEncoder::Forward(const std::vector<EtcInput>& inputs, const at::Device& device) const {
  EtcOutput out;
  out.global_begin.assign(inputs.size() + 1, 0);
  out.long_begin.assign(inputs.size() + 1, 0);
  std::vector<int64_t> global_ids, long_ids, long_match;
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

    const int64_t keys = t.n_g + t.n_l;
    t.block_index = Upload(plan.block_index, device);
    t.local_labels = Upload(plan.local_labels, device).view({b, 3 * b});
    t.local_valid = Upload(plan.local_valid, device).view({nb, 1, b, 3 * b}).to(at::kBool);
    t.l2g_labels = Upload(plan.l2g_labels, device).view({n_pad, t.n_g});
    t.global_labels = Upload(plan.global_labels, device).view({t.n_g, keys});
    t.global_valid = Upload(plan.global_valid, device).view({1, t.n_g, keys}).to(at::kBool);
  }

  const at::Tensor none;
  // Exact-match flags only for models with the feature (global tokens never match).
  const bool match = config_.exact_match_feature;
  const at::Tensor global_ids_t = Upload(global_ids, device).unsqueeze(0);
  at::Tensor xg =
      embeddings_.Forward(global_ids_t, none, match ? at::zeros_like(global_ids_t) : none)
          .squeeze(0);
  at::Tensor xl = embeddings_
                      .Forward(Upload(long_ids, device).unsqueeze(0), none,
                               match ? Upload(long_match, device).unsqueeze(0) : none)
                      .squeeze(0);
  for (const Layer& layer : layers_) {
    const bool shared = config_.etc.shared_projections;
    const at::Tensor qg = shared ? layer.base.Query(xg) : at::linear(xg, layer.gq_w, layer.gq_b);
    const at::Tensor kg = shared ? layer.base.Key(xg) : at::linear(xg, layer.gk_w, layer.gk_b);
    const at::Tensor vg = shared ? layer.base.Value(xg) : at::linear(xg, layer.gv_w, layer.gv_b);
    const at::Tensor ql = layer.base.Query(xl), kl = layer.base.Key(xl), vl = layer.base.Value(xl);
    std::vector<at::Tensor> g_context, l_context;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const int64_t gb = out.global_begin[i], lb = out.long_begin[i];
      const RequestTables& t = tables[i];
      auto [gc, lc] =
          Attend(layer, qg.narrow(0, gb, t.n_g), kg.narrow(0, gb, t.n_g), vg.narrow(0, gb, t.n_g),
                 ql.narrow(0, lb, t.n_l), kl.narrow(0, lb, t.n_l), vl.narrow(0, lb, t.n_l), t);
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
