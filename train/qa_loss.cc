#include "train/qa_loss.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace longqa {
namespace {

// Negative log-likelihood of `target` under softmax(scores), and whether it is the argmax.
std::pair<at::Tensor, bool> CrossEntropy(const at::Tensor& scores, int64_t target) {
  const at::Tensor nll = -at::log_softmax(scores, 0)[target];
  return {nll, scores.argmax().item<int64_t>() == target};
}

}  // namespace

QaLossResult ComputeQaLoss(const QaLogits& logits,
                           const std::vector<const TrainingExample*>& batch) {
  QaLossResult r;
  r.examples = static_cast<int64_t>(batch.size());
  std::vector<int64_t> types;
  for (const TrainingExample* ex : batch) types.push_back(ex->answer_type);
  const at::Tensor type_targets = at::tensor(types, at::kLong).to(logits.type.device());
  const at::Tensor type_loss = at::cross_entropy_loss(logits.type, type_targets);
  const at::Tensor type_hits = (logits.type.detach().argmax(1) == type_targets).to(at::kCPU);

  std::vector<at::Tensor> long_terms, span_terms, supporting_terms;
  for (size_t i = 0; i < batch.size(); ++i) {
    const TrainingExample& ex = *batch[i];
    const TokenizedDocument& doc = ex.prepared.document;
    const int64_t base = logits.context_begin[i];
    bool right = type_hits[static_cast<int64_t>(i)].item<bool>();
    r.type_correct += right;
    if (ex.long_paragraph >= 0) {
      std::vector<int64_t> rows;
      for (int64_t t : doc.paragraph_token) rows.push_back(base + t);
      const auto [nll, hit] =
          CrossEntropy(logits.long_score.index_select(
                           0, at::tensor(rows, at::kLong).to(logits.long_score.device())),
                       ex.long_paragraph);
      long_terms.push_back(nll);
      ++r.long_targets;
      r.long_correct += hit;
      right = right && hit;
    }
    if (ex.short_start >= 0) {
      // The gold paragraph's tokens after its paragraph token.
      const int64_t first = doc.paragraph_token[ex.long_paragraph] + 1;
      const int64_t last = ex.long_paragraph + 1 < static_cast<int64_t>(doc.paragraph_token.size())
                               ? doc.paragraph_token[ex.long_paragraph + 1]
                               : static_cast<int64_t>(doc.ids.size());
      const auto [start_nll, start_hit] =
          CrossEntropy(logits.start.narrow(0, base + first, last - first), ex.short_start - first);
      const auto [end_nll, end_hit] =
          CrossEntropy(logits.end.narrow(0, base + first, last - first), ex.short_end - first);
      span_terms.push_back((start_nll + end_nll) / 2);
      ++r.span_targets;
      r.span_correct += start_hit && end_hit;
      right = right && start_hit && end_hit;
    }
    r.all_correct += right;
    if (logits.supporting.defined() && !ex.supporting_paragraphs.empty()) {
      std::vector<int64_t> segments;
      for (const int64_t p : ex.supporting_paragraphs) {
        segments.push_back(logits.paragraph_segment[i][p]);
      }
      segments.erase(std::unique(segments.begin(), segments.end()), segments.end());
      const at::Tensor scores = logits.supporting.narrow(
          0, logits.segments_begin[i], logits.segments_begin[i + 1] - logits.segments_begin[i]);
      // Each segment a yes/no, positives and negatives weighted alike: no floor for two targets
      // (a softmax would cap each at 1/2) and no drowning of one target among 256 segments.
      at::Tensor positive = at::zeros_like(scores, at::kBool);
      positive.index_fill_(0, at::tensor(segments, at::kLong).to(scores.device()), true);
      const at::Tensor log_yes = at::log_sigmoid(scores), log_no = at::log_sigmoid(-scores);
      at::Tensor term = -log_yes.masked_select(positive).mean();
      if (segments.size() < static_cast<size_t>(scores.size(0))) {
        term = term - log_no.masked_select(positive.logical_not()).mean();
      }
      supporting_terms.push_back(term);
      ++r.supporting_targets;
      const int64_t best = scores.argmax().item<int64_t>();
      r.supporting_correct += std::find(segments.begin(), segments.end(), best) != segments.end();
    }
  }
  r.total = type_loss;
  r.type_loss = type_loss.item<double>();
  if (!long_terms.empty()) {
    const at::Tensor l = at::stack(long_terms).mean();
    r.long_loss = l.item<double>();
    r.total = r.total + l;
  }
  if (!span_terms.empty()) {
    const at::Tensor s = at::stack(span_terms).mean();
    r.span_loss = s.item<double>();
    r.total = r.total + s;
  }
  if (!supporting_terms.empty()) {
    const at::Tensor s = at::stack(supporting_terms).mean();
    r.supporting_loss = s.item<double>();
    r.total = r.total + s;
  }
  return r;
}

}  // namespace longqa
