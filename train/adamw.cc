#include "train/adamw.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"

namespace longqa {
namespace {

bool Decays(const std::string& name) {
  const bool bias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
  return !bias && name.find("LayerNorm") == std::string::npos &&
         name.find("embeddings") == std::string::npos;
}

}  // namespace

AdamW::AdamW(const TensorMap& params, const AdamWOptions& options)
    : options_(options), params_(params) {
  for (const auto& [name, p] : params_) {
    names_.push_back(name);
    exp_avg_[name] = at::zeros_like(p).detach();
    exp_avg_sq_[name] = at::zeros_like(p).detach();
  }
}

void AdamW::Step(double lr) {
  ++steps_;
  const double bias1 = 1 - std::pow(options_.beta1, static_cast<double>(steps_));
  const double bias2 = 1 - std::pow(options_.beta2, static_cast<double>(steps_));
  at::NoGradGuard no_grad;
  for (const std::string& name : names_) {
    at::Tensor& p = params_[name];
    const at::Tensor& g = p.grad();
    if (!g.defined()) continue;
    if (Decays(name)) p.mul_(1 - lr * options_.weight_decay);
    at::Tensor& m = exp_avg_[name];
    at::Tensor& v = exp_avg_sq_[name];
    m.mul_(options_.beta1).add_(g, 1 - options_.beta1);
    v.mul_(options_.beta2).addcmul_(g, g, 1 - options_.beta2);
    const at::Tensor denom = (v / bias2).sqrt_().add_(options_.eps);
    p.addcdiv_(m, denom, -lr / bias1);
  }
}

void AdamW::ZeroGrad() {
  for (auto& [name, p] : params_) {
    if (p.grad().defined()) p.mutable_grad() = at::Tensor();
  }
}

double AdamW::ClipGradNorm(double max_norm) {
  at::NoGradGuard no_grad;
  // Summed where the gradients are, one read back: a host round trip per tensor stalls a GPU.
  std::vector<at::Tensor> squares;
  for (auto& [name, p] : params_) {
    if (p.grad().defined()) squares.push_back(p.grad().pow(2).sum().to(at::kDouble));
  }
  const double norm = squares.empty() ? 0.0 : std::sqrt(at::stack(squares).sum().item<double>());
  if (norm > max_norm) {
    for (auto& [name, p] : params_) {
      if (p.grad().defined()) p.mutable_grad().mul_(max_norm / (norm + 1e-12));
    }
  }
  return norm;
}

TensorMap AdamW::State() const {
  TensorMap state;
  for (const std::string& name : names_) {
    state["exp_avg." + name] = exp_avg_.at(name);
    state["exp_avg_sq." + name] = exp_avg_sq_.at(name);
  }
  return state;
}

absl::Status AdamW::LoadState(const TensorMap& state, int64_t steps) {
  at::NoGradGuard no_grad;
  for (const std::string& name : names_) {
    for (TensorMap* target : {&exp_avg_, &exp_avg_sq_}) {
      const std::string key = (target == &exp_avg_ ? "exp_avg." : "exp_avg_sq.") + name;
      const auto it = state.find(key);
      if (it == state.end() || !it->second.sizes().equals((*target)[name].sizes())) {
        return absl::InvalidArgumentError(
            absl::StrCat("optimizer state: '", key, "' missing or of another shape"));
      }
      (*target)[name].copy_(it->second);
    }
  }
  steps_ = steps;
  return absl::OkStatus();
}

}  // namespace longqa
