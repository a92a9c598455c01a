#include "model/encoders/cluster_former.h"

#include <ATen/ATen.h>

#include <utility>

#include "kernels/ops.h"
#include "model/encoders/clustered_attention.h"
#include "model/encoders/neural_clustering_attention.h"
#include "model/encoders/trainable_ops.h"

namespace longqa {
namespace {

at::Tensor ToDevice(const std::vector<int64_t>& v, const at::Device& device) {
  return at::tensor(v, at::kLong).to(device);
}

}  // namespace

ClusterFormerEncoder::ClusterFormerEncoder(const ModelConfig& config, const TensorMap& weights,
                                           Precision precision)
    : config_(config), embeddings_(weights, config) {
  for (int64_t i = 0; i < config.num_layers(); ++i) {
    const char kind = config.layers[i];
    const std::string scope = LayerScope(i);
    layers_.emplace_back(weights, scope, config, precision, IsClusteringAttentionLayer(kind));
    centroids_.push_back(kind == 'C' || kind == 'N' ? WeightAt(weights, scope + ".centroids")
                                                    : at::Tensor());
    projections_.push_back(kind == 'N' ? WeightAt(weights, scope + kClusterProjection)
                                       : at::Tensor());
    planes_.push_back(kind == 'K' || kind == 'I' ? WeightAt(weights, scope + kHashPlanes)
                                                 : at::Tensor());
  }
}

at::Tensor ClusterFormerEncoder::EmbedWindows(const WindowPlan& plan,
                                              const at::Device& device) const {
  const int64_t kt = plan.num_windows;
  const int64_t t_len = plan.window_len;
  std::vector<int64_t> positions(plan.slot_positions.size());
  for (size_t s = 0; s < positions.size(); ++s) {
    // Padding takes RoBERTa's padding position (pad id); it is masked everywhere anyway.
    positions[s] = plan.slot_positions[s] < 0 ? config_.special.pad
                                              : plan.slot_positions[s] + config_.position_offset;
  }
  return embeddings_.Forward(ToDevice(plan.slot_tokens, device).view({kt, t_len}),
                             ToDevice(positions, device).view({kt, t_len}),
                             config_.exact_match_feature
                                 ? ToDevice(plan.slot_match, device).view({kt, t_len})
                                 : at::Tensor(),
                             ToDevice(plan.slot_types, device).view({kt, t_len}));
}

at::Tensor ClusterFormerEncoder::ForwardIndependentWindows(const WindowPlan& plan,
                                                           const at::Device& device,
                                                           const StopCheck& stop) const {
  const at::Tensor window_valid =
      (ToDevice(plan.window_index, device) >= 0).view({plan.num_windows, plan.window_len});
  at::Tensor windows = EmbedWindows(plan, device);
  for (int64_t i = 0; i < config_.num_layers(); ++i) {
    StopIfAsked(stop);
    windows = layers_[i].ForwardReplacing(std::move(windows), window_valid, stop);
  }
  return windows;
}

at::Tensor ClusterFormerEncoder::Forward(const WindowPlan& plan, const at::Device& device,
                                         const ClusterLayerObserver& observer,
                                         const StopCheck& stop) const {
  const int64_t kt = plan.num_windows;
  const int64_t t_len = plan.window_len;
  const int64_t d = config_.hidden_size;
  const int64_t m = config_.stride_tokens;

  const at::Tensor window_index = ToDevice(plan.window_index, device);
  const at::Tensor window_valid = (window_index >= 0).view({kt, t_len});
  at::Tensor windows = EmbedWindows(plan, device);
  const at::Tensor merge_offsets = ToDevice(plan.merge_offsets, device);
  const at::Tensor merge_sources = ToDevice(plan.merge_sources, device);

  // Cluster layers share one chunk plan (it depends only on m and the requests' row counts).
  const bool has_cluster_layer = config_.layers.find('C') != std::string::npos;
  ChunkPlan chunk_plan;
  at::Tensor rows_begin, sorted_to_slot, chunk_valid;
  if (has_cluster_layer) {
    chunk_plan = PlanChunks(plan.rows_begin, m);
    rows_begin = ToDevice(plan.rows_begin, device);
    sorted_to_slot = ToDevice(chunk_plan.sorted_to_slot, device);
    chunk_valid =
        at::tensor(std::vector<int64_t>(chunk_plan.slot_valid.begin(), chunk_plan.slot_valid.end()),
                   at::kLong)
            .to(device)
            .view({chunk_plan.num_chunks, m})
            .to(at::kBool);
  }

  at::Tensor hbar;  // [R, d]: undefined until the first layer has merged the windows
  for (int64_t i = 0; i < config_.num_layers(); ++i) {
    StopIfAsked(stop);
    // Each copy of the rows is let go as soon as the next is made, and the layers write over their
    // input (ForwardReplacing): a layer's peak holds one copy of the windows and its groups'
    // temporaries, not H̄ and two copies of the windows too (at inference; with autograd the graph
    // keeps them anyway). Peak tensors of models/demo at 25k tokens: 150 -> 88 MiB with the
    // embeddings' sums in place (docs/perf/README.md, session 25).
    if (config_.layers[i] == 'S') {
      if (hbar.defined()) {
        windows = GatherRowsTrainable(hbar, window_index).view({kt, t_len, d});
        hbar = at::Tensor();
      }
      windows = layers_[i].ForwardReplacing(std::move(windows), window_valid, stop);
      hbar = OverlapMergeTrainable(windows.view({kt * t_len, d}), merge_offsets, merge_sources);
      windows = at::Tensor();
      continue;
    }
    if (IsClusteringAttentionLayer(config_.layers[i])) {
      hbar = ClusteringAttentionLayer(i, hbar, plan.rows_begin);
      continue;
    }
    if (observer && !observer(i, hbar)) return hbar;
    const at::Tensor& centroids = centroids_[i];
    const at::Tensor cluster_ids = kernels::ClusterAssign(hbar.detach(), centroids);
    const at::Tensor perm = kernels::StableCountingSort(cluster_ids, rows_begin, centroids.size(0));
    at::Tensor chunk_index = at::full({chunk_plan.num_chunks * m}, -1, perm.options());
    chunk_index.index_put_({sorted_to_slot}, perm);
    at::Tensor sorted = GatherRowsTrainable(hbar, chunk_index).view({chunk_plan.num_chunks, m, d});
    hbar = at::Tensor();
    const at::Tensor chunks = layers_[i].ForwardReplacing(std::move(sorted), chunk_valid, stop);
    at::Tensor back = at::empty({plan.num_rows}, perm.options());
    back.index_put_({perm}, sorted_to_slot);
    hbar = GatherRowsTrainable(chunks.view({chunk_plan.num_chunks * m, d}), back);
  }
  return hbar;
}

at::Tensor ClusterFormerEncoder::ClusteringAttentionLayer(
    int64_t layer, const at::Tensor& hbar, const std::vector<int64_t>& rows_begin) const {
  const TransformerLayer& base = layers_[layer];
  const char kind = config_.layers[layer];
  const int64_t d = config_.hidden_size, h = config_.num_heads, dh = config_.head_dim();
  const at::Tensor q = base.Query(hbar), k = base.Key(hbar), v = base.Value(hbar);
  const ClusteredAttentionOptions options{config_.clustered.clusters, config_.clustered.iterations,
                                          kind == 'I' ? config_.clustered.topk : 0};
  std::vector<at::Tensor> contexts;
  for (size_t r = 0; r + 1 < rows_begin.size(); ++r) {
    const int64_t begin = rows_begin[r], n = rows_begin[r + 1] - begin;
    auto rows = [&](const at::Tensor& t) { return t.narrow(0, begin, n).view({n, h, dh}); };
    if (kind == 'N') {
      const at::Tensor ids =
          NeuralClusterIds(hbar.narrow(0, begin, n), projections_[layer], centroids_[layer]);
      contexts.push_back(
          NeuralClusteringAttention(rows(q), rows(k), rows(v), ids, centroids_[layer].size(0))
              .view({n, d}));
    } else {
      auto heads_first = [&](const at::Tensor& t) { return rows(t).transpose(0, 1); };
      contexts.push_back(ClusteredAttention(heads_first(q), heads_first(k), heads_first(v),
                                            planes_[layer], options)
                             .transpose(0, 1)
                             .reshape({n, d}));
    }
  }
  return base.Finish(hbar, contexts.size() == 1 ? contexts[0] : at::cat(contexts, 0));
}

}  // namespace longqa
