// Stopping a forward pass that nobody waits for any more: the batcher passes a check that says
// whether every caller of the batch has left (cancelled, or deadline passed, or the drain deadline
// passed), and the encoders ask it between layers, between a layer's groups of windows
// (TransformerLayer::Forward) and between ETC's attention chunks. When it says yes they throw
// BatchStopped, which Engine::Run turns into CANCELLED answers: the work ends within one group
// (about kInferenceChunkRows rows on the CPU), not one layer of a whole long document.
#pragma once

#include <exception>
#include <functional>

namespace longqa {

using StopCheck = std::function<bool()>;

class BatchStopped : public std::exception {
 public:
  const char* what() const noexcept override { return "no caller of this batch is waiting"; }
};

inline void StopIfAsked(const StopCheck& stop) {
  if (stop && stop()) throw BatchStopped();
}

}  // namespace longqa
