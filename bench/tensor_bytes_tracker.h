// LibTorch's CPU allocator wrapped so that a process can see what its tensors hold: the bytes of
// the blocks it hands out while they live, their peak, and (while recording) the order of each
// allocation and free with its size. longqa-memory-bench reports the peak; the layer memory test
// (tests/unit/layer_memory_test.cc) reads the order: which blocks were alive when another was
// allocated. Header-only, for a bench and a test binary; one instance a process.
#pragma once

#include <c10/core/Allocator.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace longqa {

class TensorBytesTracker final : public c10::Allocator {
 public:
  // One allocation (bytes > 0) or free (bytes < 0), in the order they happened.
  struct Event {
    int64_t bytes;
  };

  // Wraps the current CPU allocator and installs itself in its place (above any priority).
  // Blocks allocated before are freed by their own deleters (or, asked of this one, by the inner
  // allocator's) and not counted. Its blocks' context is their data pointer, as LibTorch's
  // raw_allocate requires, so sizes and LibTorch's own blocks are kept in a map.
  static TensorBytesTracker& Install() {
    static TensorBytesTracker tracker(c10::GetAllocator(c10::DeviceType::CPU));
    c10::SetAllocator(c10::DeviceType::CPU, &tracker, /*priority=*/255);
    return tracker;
  }

  c10::DataPtr allocate(size_t n) const override {
    c10::DataPtr block = inner_->allocate(n);
    void* data = block.get();
    const c10::Device device = block.device();
    std::lock_guard<std::mutex> lock(mutex_);
    live_ += static_cast<int64_t>(n);
    peak_ = std::max(peak_, live_);
    if (recording_) events_.push_back({static_cast<int64_t>(n)});
    if (data != nullptr) blocks_.emplace(data, std::make_pair(std::move(block), n));
    return c10::DataPtr(data, data, &Free, device);
  }

  c10::DeleterFnPtr raw_deleter() const override { return &Free; }

  // The most bytes alive at once since installation.
  int64_t peak() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return peak_;
  }

  void StartRecording() {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.clear();
    recording_ = true;
  }
  std::vector<Event> StopRecording() {
    std::lock_guard<std::mutex> lock(mutex_);
    recording_ = false;
    return std::move(events_);
  }

 private:
  explicit TensorBytesTracker(c10::Allocator* inner) : inner_(inner) { instance_ = this; }

  static void Free(void* data) {
    if (data == nullptr) return;
    const TensorBytesTracker& self = *instance_;
    std::lock_guard<std::mutex> lock(self.mutex_);
    const auto it = self.blocks_.find(data);
    if (it == self.blocks_.end()) {
      // A block from before the wrapper whose owner frees it through the current allocator's
      // raw deleter (int8's packed weights do): it was the inner allocator's.
      self.inner_->raw_deleter()(data);
      return;
    }
    const auto bytes = static_cast<int64_t>(it->second.second);
    self.live_ -= bytes;
    if (self.recording_) self.events_.push_back({-bytes});
    self.blocks_.erase(it);  // LibTorch's own block freed here
  }

  static inline const TensorBytesTracker* instance_ = nullptr;
  c10::Allocator* inner_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<void*, std::pair<c10::DataPtr, size_t>> blocks_;
  mutable int64_t live_ = 0;
  mutable int64_t peak_ = 0;
  mutable bool recording_ = false;
  mutable std::vector<Event> events_;
};

}  // namespace longqa
