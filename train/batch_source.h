// Training batches: shuffled passes over a stage's examples, cut by a document-token budget.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "train/training_example.h"

namespace longqa {

class BatchSource {
 public:
  // `examples` must outlive the source and be non-empty.
  BatchSource(const std::vector<TrainingExample>* examples, uint64_t seed, int64_t batch_tokens,
              int64_t max_batch);

  // The next batch: examples in shuffled order until adding one would pass batch_tokens (a batch
  // holds at least one example) or the batch has max_batch examples. A pass ends before the next
  // one is shuffled, so every example is seen once per pass.
  std::vector<const TrainingExample*> Next();

 private:
  const std::vector<TrainingExample>* examples_;
  std::mt19937_64 rng_;
  int64_t batch_tokens_, max_batch_;
  std::vector<size_t> order_;
  size_t cursor_ = 0;
};

}  // namespace longqa
