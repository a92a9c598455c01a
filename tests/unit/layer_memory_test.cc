// What a sliding-window layer's inference path holds at once (issue 22: peak memory a token flat
// from 4k to 32k tokens). The attention's Q/K/V ([rows, 3d]) must be gone before Finish allocates
// the FFN's inner activations ([rows, intermediate]): holding both made models/demo's fixed part
// 6 MiB larger (1.19x per token at 4k against 32k; 1.06x once they no longer overlap, session 29).
// And ETC's long-query softmax must not hold a second copy of its scores.
// Read from the order of the CPU allocator's allocations and frees (bench/tensor_bytes_tracker.h),
// not from timings or the process's resident size. Its own binary: the tracker stays installed.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "bench/tensor_bytes_tracker.h"
#include "model/encoders/fused_cpu_ops.h"
#include "model/encoders/precision.h"
#include "model/encoders/transformer_layer.h"
#include "model/format/config.h"
#include "model/format/weights.h"

namespace longqa {
namespace {

struct LiveAt {
  bool found = false;        // whether a block of `allocated` bytes was allocated at all
  int64_t live = 0;          // blocks of `watched` bytes alive when the first one was
  int64_t watched_seen = 0;  // blocks of `watched` bytes allocated before it
};

// Replays the events: at the first allocation of `allocated` bytes, how many blocks of `watched`
// bytes were alive, and how many had been allocated.
LiveAt LiveWhenAllocated(const std::vector<TensorBytesTracker::Event>& events, int64_t allocated,
                         int64_t watched) {
  LiveAt at;
  for (const TensorBytesTracker::Event& e : events) {
    if (e.bytes == allocated) {
      at.found = true;
      return at;
    }
    if (e.bytes == watched) ++at.live, ++at.watched_seen;
    if (e.bytes == -watched) --at.live;
  }
  return at;
}

class LayerMemoryTest : public ::testing::TestWithParam<Precision> {};

// 4 windows of 40 tokens at d 64 (4 heads), FFN 256: one group, one row block of Finish (160
// rows). The sizes watched are unlike any other block's: Q/K/V 160 x 192 elements, the FFN's
// inner 160 x 256, the scores (LibTorch's path) 16 x 40 x 40, the rest 160 x 64.
TEST_P(LayerMemoryTest, AttentionProjectionsAreGoneBeforeTheFeedForwardIsAllocated) {
  const Precision precision = GetParam();
  const int64_t d = 64, inner = 256, windows = 4, t = 40, rows = windows * t;
  const ModelConfig c = ClusterFormerConfig(/*vocab_size=*/120, /*hidden_size=*/d,
                                            /*num_heads=*/4, /*intermediate_size=*/inner, "S",
                                            /*window=*/48, /*stride=*/40,
                                            /*clusters_per_layer=*/4, /*max_question_tokens=*/40);
  const TransformerLayer layer(RandomWeights(c, 41), "encoder.layer.0", c, precision);
  at::manual_seed(42);
  const at::Tensor x = at::randn({windows, t, d});
  at::Tensor valid = at::ones({windows, t}, at::kBool);
  valid[2].narrow(0, 25, 15).fill_(false);
  at::InferenceMode guard;
  const at::Tensor reference = layer.Forward(x, valid);  // first-call allocations out of the way

  TensorBytesTracker& tracker = TensorBytesTracker::Install();
  tracker.StartRecording();
  const at::Tensor out = layer.Forward(x, valid);
  const std::vector<TensorBytesTracker::Event> events = tracker.StopRecording();
  EXPECT_TRUE(at::equal(out, reference));

  // The dtypes the projections and the FFN's inner activations come out in: bf16 in kBf16
  // (its GEMMs' outputs), else fp32. A fp32 Q/K/V converted to bf16 counts too.
  const int64_t inner_bytes = rows * inner * (precision == Precision::kBf16 ? 2 : 4);
  for (const int64_t element_bytes : {4, 2}) {
    const int64_t qkv_bytes = rows * 3 * d * element_bytes;
    const LiveAt at = LiveWhenAllocated(events, inner_bytes, qkv_bytes);
    ASSERT_TRUE(at.found) << "no block of the FFN's inner size (" << inner_bytes
                          << " bytes): the test's sizes no longer match the layer";
    EXPECT_EQ(at.live, 0) << at.live << " Q/K/V block(s) of " << qkv_bytes
                          << " bytes alive when the FFN's inner activations were allocated";
    if (element_bytes == (precision == Precision::kBf16 ? 2 : 4)) {
      EXPECT_GE(at.watched_seen, 1) << "the attention's Q/K/V block was not seen: sizes changed";
    }
  }
}

// ETC's long-query softmax (its largest temporary) is written over the scores on every CPU: no
// second block of the scores' size, on the fast path (fp32 here with AVX-512) or LibTorch's
// (fp64 always; every dtype on an AVX2 CPU).
TEST(SoftmaxMemoryTest, InPlaceSoftmaxAllocatesNoSecondScoresBlock) {
  for (const at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    at::Tensor scores = at::randn({64, 4096}).to(dtype);
    const int64_t bytes = scores.numel() * scores.element_size();
    TensorBytesTracker& tracker = TensorBytesTracker::Install();
    tracker.StartRecording();
    SoftmaxLastDimInPlace(scores);
    int64_t largest = 0;
    for (const TensorBytesTracker::Event& e : tracker.StopRecording()) {
      largest = std::max(largest, e.bytes);
    }
    EXPECT_LT(largest, bytes / 4) << at::toString(dtype) << ": a block of " << largest
                                  << " bytes beside scores of " << bytes;
  }
}

INSTANTIATE_TEST_SUITE_P(Precisions, LayerMemoryTest,
                         ::testing::Values(Precision::kFp32, Precision::kBf16, Precision::kInt8),
                         [](const auto& info) {
                           return info.param == Precision::kFp32   ? "fp32"
                                  : info.param == Precision::kBf16 ? "bf16"
                                                                   : "int8";
                         });

}  // namespace
}  // namespace longqa
