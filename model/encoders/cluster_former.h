// The Cluster-Former encoder (cluster_former_v2 §3): embeddings per window, then the layer plan:
// S = a transformer layer over every window, then overlap averaging (eqs. 1-3); C = cosine
// assignment of H̄'s rows to the layer's centroids (eq. 5), stable sort by cluster id per request,
// chunks of m, a transformer layer over every chunk, rows back in their original order (eqs. 6-9).
// All requests of a batch run together: windows (S) and chunks (C) of all requests are one batch.
// N, K and I layers (neural clustering, clustered and improved clustered attention) also work on
// H̄: their Q/K/V and FFN GEMMs run over all requests' rows at once, their attention pattern per
// request (neural_clustering_attention.h, clustered_attention.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>

#include "model/encoders/precision.h"
#include "model/encoders/stop_check.h"
#include "model/encoders/transformer_layer.h"
#include "model/encoders/window_plan.h"
#include "model/format/config.h"
#include "model/format/weights.h"

namespace longqa {

class ClusterFormerEncoder {
 public:
  // `weights` must already be on the device the encoder will run on.
  ClusterFormerEncoder(const ModelConfig& config, const TensorMap& weights,
                       Precision precision = Precision::kFp32);

  // Called with H̄ [R, d] just before each cluster layer; returning false stops the forward pass
  // there (the centroid builder needs only the states up to the layer it works on).
  using ClusterLayerObserver = std::function<bool(int64_t layer, const at::Tensor& hbar)>;

  // Runs every layer; returns H̄ [plan.num_rows, d] on `device`. `stop` is asked before every
  // layer (stop_check.h).
  at::Tensor Forward(const WindowPlan& plan, const at::Device& device,
                     const ClusterLayerObserver& observer = nullptr,
                     const StopCheck& stop = nullptr) const;

  // qa_format squad (S layers only): every window through every layer on its own, as BERT was
  // fine-tuned, with no merge of overlapping windows; returns the window states [Kt, T, d].
  at::Tensor ForwardIndependentWindows(const WindowPlan& plan, const at::Device& device,
                                       const StopCheck& stop = nullptr) const;

 private:
  // The embeddings of every window slot [Kt, T, d].
  at::Tensor EmbedWindows(const WindowPlan& plan, const at::Device& device) const;
  // An N, K or I layer over H̄ [R, d]: each request's rows [rows_begin[r], rows_begin[r+1]) are one
  // sequence.
  at::Tensor ClusteringAttentionLayer(int64_t layer, const at::Tensor& hbar,
                                      const std::vector<int64_t>& rows_begin) const;

  ModelConfig config_;
  Embeddings embeddings_;
  std::vector<TransformerLayer> layers_;
  std::vector<at::Tensor> centroids_;    // per layer; C and N layers only
  std::vector<at::Tensor> projections_;  // per layer; N layers only (W^C)
  std::vector<at::Tensor> planes_;       // per layer; K and I layers only (hash planes)
};

}  // namespace longqa
