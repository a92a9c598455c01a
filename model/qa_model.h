// The question-answering network: an encoder (Cluster-Former or ETC) and the answer heads. It maps
// a batch of tokenized requests to head logits as tensors, differentiable when the weights require
// grad: the engine decodes them into answers, the trainer turns them into losses.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

#include "model/document.h"
#include "model/encoders/cluster_former.h"
#include "model/encoders/etc_encoder.h"
#include "model/format/config.h"
#include "model/format/weights.h"

namespace longqa {

struct QaModelInput {
  const std::vector<int32_t>* question_ids = nullptr;  // CLS + question pieces + SEP
  const TokenizedDocument* document = nullptr;
};

struct QaLogits {
  at::Tensor start, end, long_score;   // [sum x]: per document token, requests concatenated
  at::Tensor type;                     // [n, 5]: answer-type logits per request
  std::vector<int64_t> context_begin;  // [n+1]: each request's first token in start/end/long
  // qa_format squad only (else undefined/empty): every window's own span logits [Kt, T] (its
  // slot 0 is CLS, its context tokens sit at slots q.. where q is the request's question length
  // with CLS and SEP), each request's first window [n+1], and each window's context tokens
  // [begin, end) [Kt].
  at::Tensor window_start, window_end;
  std::vector<int64_t> windows_begin, window_context_begin, window_context_end;
  // ETC with etc.supporting_fact_head, autograd on (training) only; else undefined/empty: a
  // supporting-fact score per segment token [sum s], each request's first segment there [n+1],
  // and per request the segment of each paragraph (the trainer's targets are paragraphs).
  at::Tensor supporting;
  std::vector<int64_t> segments_begin;
  std::vector<std::vector<int64_t>> paragraph_segment;
};

// The Cluster-Former's window inputs of a batch (with exact-match flags when the config asks).
std::vector<WindowInput> MakeWindowInputs(const ModelConfig& config,
                                          const std::vector<QaModelInput>& batch);

class QaModel {
 public:
  // `weights` must already be on the device the model will run on; the model keeps references
  // (the same tensors), so a trainer's in-place updates are seen by the next Forward.
  QaModel(const ModelConfig& config, const TensorMap& weights,
          Precision precision = Precision::kFp32);

  // `observer` (Cluster-Former only) sees H̄ before every cluster layer (the trainer's memory bank).
  // `stop` is asked between layers; when it says yes, Forward throws BatchStopped.
  QaLogits Forward(const std::vector<QaModelInput>& batch, const at::Device& device,
                   const ClusterFormerEncoder::ClusterLayerObserver& observer = nullptr,
                   const StopCheck& stop = nullptr) const;

  // ETC only (a Cluster-Former model ignores it): EtcEncoder::set_recompute_layers, for training
  // on documents with many segments.
  void set_recompute_layers(bool on);

  const ModelConfig& config() const { return config_; }

 private:
  // The encoder's per-token document states [sum x, d] and each request's answer-type input
  // state [n, d].
  std::pair<at::Tensor, at::Tensor> EncodeClusterFormer(
      const std::vector<QaModelInput>& batch, const at::Device& device,
      const ClusterFormerEncoder::ClusterLayerObserver& observer, const StopCheck& stop,
      QaLogits* out) const;
  // Sets out's context_begin, and its supporting-fact fields when the config has the head.
  std::pair<at::Tensor, at::Tensor> EncodeEtc(const std::vector<QaModelInput>& batch,
                                              const at::Device& device, const StopCheck& stop,
                                              QaLogits* out) const;

  // answer_type_pooling "paragraph": per request, the paragraph tokens' states [n, d] weighted
  // by the softmax of their long-answer scores.
  at::Tensor ReadLongAnswerParagraph(const at::Tensor& context, const at::Tensor& long_score,
                                     const std::vector<QaModelInput>& batch,
                                     const std::vector<int64_t>& context_begin) const;

  ModelConfig config_;
  std::unique_ptr<ClusterFormerEncoder> cluster_former_;  // one of the two is set
  std::unique_ptr<EtcEncoder> etc_;
  at::Tensor qa_w_, qa_b_, long_w_, long_b_, type_w_, type_b_;
  at::Tensor supporting_w_, supporting_b_;  // etc.supporting_fact_head only
};

}  // namespace longqa
