// AdamW (Loshchilov & Hutter) over a TensorMap of parameters, with its moments as a TensorMap so
// that a checkpoint stores them in safetensors beside the weights. No weight decay on biases,
// LayerNorm and embeddings (the usual BERT recipe).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "model/format/weights.h"

namespace longqa {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
};

class AdamW {
 public:
  // `params`: the tensors to train (requires_grad set), by name; they are updated in place.
  AdamW(const TensorMap& params, const AdamWOptions& options);

  // One update with learning rate `lr` from the parameters' .grad(); parameters without a
  // gradient (unused in this step) are left alone.
  void Step(double lr);
  void ZeroGrad();
  // Scales all gradients so that their global L2 norm is at most max_norm; returns the norm.
  double ClipGradNorm(double max_norm);

  // "exp_avg.<name>" and "exp_avg_sq.<name>" for every parameter, and the step count.
  TensorMap State() const;
  int64_t steps() const { return steps_; }
  absl::Status LoadState(const TensorMap& state, int64_t steps);

 private:
  AdamWOptions options_;
  std::vector<std::string> names_;
  TensorMap params_, exp_avg_, exp_avg_sq_;
  int64_t steps_ = 0;
};

}  // namespace longqa
