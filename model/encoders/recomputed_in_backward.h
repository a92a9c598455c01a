// Activation checkpointing for training (the reentrant form of torch.utils.checkpoint): a
// function of some tensors runs once without keeping its autograd graph, and runs again with
// autograd on when the backward pass reaches it, back-propagating through the rebuilt graph.
// Memory: one function's graph at a time (e.g. one ETC layer's global-local scores, which grow
// with tokens × segments) instead of every layer's, for one more forward pass of each.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>

namespace longqa {

using RecomputableFunction = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;

// Returns fn(inputs). With autograd on, the outputs require grad and their backward re-runs fn:
// the gradients of the inputs flow back through the graph as usual, and those of every other
// tensor fn reads with requires_grad (a layer's weights) accumulate into that tensor's .grad()
// (what loss.backward() does; torch::autograd::grad() over such weights would not see them).
// fn must give the same result when run again (no random dropout) and own what it captures: it
// runs again after the caller has returned. With autograd off, fn simply runs.
std::vector<at::Tensor> RecomputedInBackward(RecomputableFunction fn,
                                             const std::vector<at::Tensor>& inputs);

}  // namespace longqa
