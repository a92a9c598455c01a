#include "train/batch_source.h"

#include <algorithm>
#include <numeric>

namespace longqa {

BatchSource::BatchSource(const std::vector<TrainingExample>* examples, uint64_t seed,
                         int64_t batch_tokens, int64_t max_batch)
    : examples_(examples), rng_(seed), batch_tokens_(batch_tokens), max_batch_(max_batch) {}

std::vector<const TrainingExample*> BatchSource::Next() {
  std::vector<const TrainingExample*> batch;
  int64_t tokens = 0;
  while (static_cast<int64_t>(batch.size()) < max_batch_) {
    if (cursor_ == order_.size()) {
      order_.resize(examples_->size());
      std::iota(order_.begin(), order_.end(), 0);
      std::shuffle(order_.begin(), order_.end(), rng_);
      cursor_ = 0;
    }
    const TrainingExample& ex = (*examples_)[order_[cursor_]];
    const auto n = static_cast<int64_t>(ex.prepared.document.ids.size());
    if (!batch.empty() && tokens + n > batch_tokens_) break;
    batch.push_back(&ex);
    tokens += n;
    ++cursor_;
  }
  return batch;
}

}  // namespace longqa
