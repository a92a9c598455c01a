#include "model/qa_model.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>

#include "model/encoders/exact_match.h"
#include "model/encoders/trainable_ops.h"
#include "model/encoders/transformer_layer.h"

namespace longqa {
namespace {

at::Tensor Upload(const std::vector<int64_t>& v, const at::Device& device) {
  return at::tensor(v, at::kLong).to(device);
}

// The question's pieces without CLS and SEP.
std::vector<int32_t> QuestionPieces(const QaModelInput& in) {
  return {in.question_ids->begin() + 1, in.question_ids->end() - 1};
}

// The document's tables with a header, each header cut to the config's table_header_tokens.
std::vector<ContextTable> ContextTables(const TokenizedDocument& doc, const ModelConfig& config) {
  std::vector<ContextTable> tables;
  // (A document built by hand may leave table_header empty: no tables then.)
  if (doc.table_header.empty() || doc.token_paragraph.size() != doc.ids.size()) return tables;
  const int64_t x = static_cast<int64_t>(doc.ids.size());
  for (int64_t j = 0; j < x;) {  // one paragraph's tokens at a time
    const int64_t p = doc.token_paragraph[j];
    int64_t end = j;
    while (end < x && doc.token_paragraph[end] == p) ++end;
    const auto [header_begin, header_end] = doc.table_header.at(p);
    if (header_begin < header_end) {
      tables.push_back(
          {j, end, header_begin, std::min(header_end, header_begin + config.table_header_tokens)});
    }
    j = end;
  }
  return tables;
}

}  // namespace

std::vector<WindowInput> MakeWindowInputs(const ModelConfig& config,
                                          const std::vector<QaModelInput>& batch) {
  std::vector<WindowInput> inputs;
  for (const QaModelInput& r : batch) {
    WindowInput in{*r.question_ids, r.document->ids, {}};
    if (config.qa_format == QaFormat::kSquad) {
      // BERT's pair layout: [CLS] question [SEP] context [SEP], the context as the second segment.
      in.end_token = config.special.sep;
      in.context_type = config.type_vocab_size > 1 ? 1 : 0;
    }
    if (config.exact_match_feature) {
      in.context_match = ExactMatchFlags(QuestionPieces(r), r.document->ids);
    }
    if (config.table_header_tokens > 0) in.tables = ContextTables(*r.document, config);
    inputs.push_back(std::move(in));
  }
  return inputs;
}

QaModel::QaModel(const ModelConfig& config, const TensorMap& weights, Precision precision)
    : config_(config),
      qa_w_(WeightAt(weights, std::string(kQaOutputs) + ".weight")),
      qa_b_(WeightAt(weights, std::string(kQaOutputs) + ".bias")),
      long_w_(WeightAt(weights, std::string(kLongAnswer) + ".weight")),
      long_b_(WeightAt(weights, std::string(kLongAnswer) + ".bias")),
      type_w_(WeightAt(weights, std::string(kAnswerType) + ".weight")),
      type_b_(WeightAt(weights, std::string(kAnswerType) + ".bias")) {
  if (config_.architecture == Architecture::kEtc) {
    etc_ = std::make_unique<EtcEncoder>(config_, weights, kEtcScoreBudget, precision);
    if (config_.etc.supporting_fact_head) {
      supporting_w_ = WeightAt(weights, std::string(kSupportingFact) + ".weight");
      supporting_b_ = WeightAt(weights, std::string(kSupportingFact) + ".bias");
    }
  } else {
    cluster_former_ = std::make_unique<ClusterFormerEncoder>(config_, weights, precision);
  }
}

void QaModel::set_recompute_layers(bool on) {
  if (etc_) etc_->set_recompute_layers(on);
}

std::pair<at::Tensor, at::Tensor> QaModel::EncodeClusterFormer(
    const std::vector<QaModelInput>& batch, const at::Device& device,
    const ClusterFormerEncoder::ClusterLayerObserver& observer, const StopCheck& stop,
    QaLogits* out) const {
  const WindowPlan plan = PlanWindows(MakeWindowInputs(config_, batch), config_.window_tokens,
                                      config_.stride_tokens, config_.special.pad);
  at::Tensor hbar;
  if (config_.qa_format == QaFormat::kSquad) {
    // Independent windows: each window's own span logits for the decoder, and every H̄ row read
    // from the window that owns it (the per-token heads below see one state per token).
    const at::Tensor windows = cluster_former_->ForwardIndependentWindows(plan, device, stop);
    const at::Tensor span = at::linear(windows, qa_w_, qa_b_);
    out->window_start = span.select(2, 0);
    out->window_end = span.select(2, 1);
    out->windows_begin = plan.windows_begin;
    out->window_context_begin = plan.window_context_begin;
    out->window_context_end = plan.window_context_end;
    hbar = windows.view({-1, config_.hidden_size})
               .index_select(0, Upload(plan.row_owner_slot, device));
  } else {
    hbar = cluster_former_->Forward(plan, device, observer, stop);
  }
  out->context_begin = plan.context_begin;
  // Answer type from each request's window CLS rows: their mean (an overlap_merge over them) or
  // their element-wise max (config answer_type_pooling: the mean fades as windows multiply).
  // Left undefined for "paragraph": Forward reads the long-answer paragraph instead.
  at::Tensor type_input;
  if (config_.answer_type_pooling != "paragraph") {
    const at::Tensor cls = GatherRowsTrainable(hbar, Upload(plan.cls_rows, device));
    if (config_.answer_type_pooling == "max") {
      std::vector<at::Tensor> pooled;
      for (size_t r = 0; r + 1 < plan.windows_begin.size(); ++r) {
        pooled.push_back(
            std::get<0>(cls.slice(0, plan.windows_begin[r], plan.windows_begin[r + 1]).max(0)));
      }
      type_input = at::stack(pooled);
    } else {
      type_input = OverlapMergeTrainable(
          cls, Upload(plan.windows_begin, device),
          at::arange(plan.num_windows, at::TensorOptions(at::kLong).device(device)));
    }
  }
  return {GatherRowsTrainable(hbar, Upload(plan.context_rows, device)), type_input};
}

std::pair<at::Tensor, at::Tensor> QaModel::EncodeEtc(const std::vector<QaModelInput>& batch,
                                                     const at::Device& device,
                                                     const StopCheck& stop,
                                                     QaLogits* logits) const {
  std::vector<EtcInput> inputs;
  for (const QaModelInput& r : batch) {
    inputs.push_back(MakeEtcInput(
        config_, QuestionPieces(r), r.document->ids, r.document->token_paragraph,
        static_cast<int64_t>(r.document->paragraph_bytes.size()), r.document->word_spans));
  }
  const EtcOutput out = etc_->Forward(inputs, device, stop);
  logits->context_begin = out.long_begin;
  // The supporting-fact scores are a training signal: the inference path (autograd off, as
  // EtcEncoder decides its path) skips them.
  if (supporting_w_.defined() && at::GradMode::is_enabled()) {
    std::vector<int64_t> rows;
    logits->segments_begin = {0};
    for (size_t r = 0; r < batch.size(); ++r) {
      const std::vector<int64_t>& segment = inputs[r].global_segment;
      for (size_t g = 0; g < segment.size(); ++g) {
        if (segment[g] >= 0) rows.push_back(out.global_begin[r] + static_cast<int64_t>(g));
      }
      logits->segments_begin.push_back(static_cast<int64_t>(rows.size()));
      // A paragraph's segment is its paragraph token's.
      std::vector<int64_t>& paragraph_segment = logits->paragraph_segment.emplace_back();
      for (const int64_t t : batch[r].document->paragraph_token) {
        paragraph_segment.push_back(inputs[r].long_segment[t]);
      }
    }
    logits->supporting = at::linear(GatherRowsTrainable(out.global_states, Upload(rows, device)),
                                    supporting_w_, supporting_b_)
                             .squeeze(1);
  }
  // Answer type from the global CLS token (the first global token of each request); left
  // undefined for "paragraph", as in EncodeClusterFormer.
  if (config_.answer_type_pooling == "paragraph") return {out.long_states, at::Tensor()};
  const std::vector<int64_t> cls_rows(out.global_begin.begin(), out.global_begin.end() - 1);
  return {out.long_states, GatherRowsTrainable(out.global_states, Upload(cls_rows, device))};
}

QaLogits QaModel::Forward(const std::vector<QaModelInput>& batch, const at::Device& device,
                          const ClusterFormerEncoder::ClusterLayerObserver& observer,
                          const StopCheck& stop) const {
  QaLogits out;
  const auto [context, type_input] = etc_
                                         ? EncodeEtc(batch, device, stop, &out)
                                         : EncodeClusterFormer(batch, device, observer, stop, &out);
  // Heads: span and long-answer scores on every document token, answer type per request.
  const at::Tensor span = at::linear(context, qa_w_, qa_b_);
  out.start = span.select(1, 0);
  out.end = span.select(1, 1);
  out.long_score = at::linear(context, long_w_, long_b_).squeeze(1);
  out.type =
      at::linear(config_.answer_type_pooling == "paragraph"
                     ? ReadLongAnswerParagraph(context, out.long_score, batch, out.context_begin)
                     : type_input,
                 type_w_, type_b_);
  return out;
}

at::Tensor QaModel::ReadLongAnswerParagraph(const at::Tensor& context, const at::Tensor& long_score,
                                            const std::vector<QaModelInput>& batch,
                                            const std::vector<int64_t>& context_begin) const {
  std::vector<at::Tensor> reads;
  for (size_t r = 0; r < batch.size(); ++r) {
    std::vector<int64_t> rows;
    for (const int64_t t : batch[r].document->paragraph_token) rows.push_back(context_begin[r] + t);
    if (rows.empty()) {  // an empty document: nothing to read
      reads.push_back(at::zeros({context.size(1)}, context.options()));
      continue;
    }
    const at::Tensor index = Upload(rows, context.device());
    // The long-answer softmax picks where to read; the type loss does not train it.
    const at::Tensor weights = at::softmax(long_score.detach().index_select(0, index), 0);
    reads.push_back(at::matmul(weights.to(context.scalar_type()), context.index_select(0, index)));
  }
  return at::stack(reads);
}

}  // namespace longqa
