// Per-op time of the kernels on CPU with the bytes each moves per second, next to a plain memory
// copy's bytes/s measured in the same run, and the clustering overhead (assign + sort + permute +
// unpermute) as a share of one cluster layer at 8k tokens with d=768 (the goal: ≤ 10%).
//
// Usage: longqa-kernels-bench [--threads=N]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "kernels/ops.h"
#include "model/cpu_quota.h"
#include "model/encoders/etc_plan.h"
#include "model/encoders/transformer_layer.h"
#include "model/encoders/window_plan.h"
#include "model/format/weights.h"

namespace {

double TimeIt(const std::function<void()>& f, int reps = 10) {
  f();  // warm-up
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
}

void Row(const char* op, double seconds, double bytes, double copy_bps) {
  std::printf("%-28s %10.3f ms %10.2f GB/s %8.0f%% of copy\n", op, 1e3 * seconds,
              bytes / seconds / 1e9, 100.0 * bytes / seconds / copy_bps);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = longqa::ThisProcessCpuQuota().usable_cpus;  // as the server's --threads=0
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) threads = std::atoi(argv[i] + 10);
  }
  at::set_num_threads(threads);
  at::InferenceMode guard;
  const int64_t d = 768, q = 20, x = 8192, l = 256, m = 224;

  // Plain copy: read + write of 256 MiB.
  const at::Tensor big = at::randn({64 << 20});
  at::Tensor big_out = at::empty_like(big);
  const double copy_s = TimeIt([&] { big_out.copy_(big); }, 5);
  const double copy_bps = 2.0 * big.numel() * 4 / copy_s;
  std::printf("threads=%d  memory copy: %.2f GB/s (read + write)\n\n", threads, copy_bps / 1e9);
  std::printf("%-28s %13s %15s %15s\n", "op (8k tokens, d=768)", "time", "bytes/s", "");

  longqa::WindowInput input;
  input.question.assign(q, 7);
  input.context.assign(x, 9);
  const longqa::WindowPlan plan = longqa::PlanWindows({input}, l, m, 1);
  const int64_t rows = plan.num_rows, slots = plan.num_windows * plan.window_len;
  const at::Tensor hbar = at::randn({rows, d});
  const at::Tensor window_index = at::tensor(plan.window_index, at::kLong);
  const at::Tensor windows = at::randn({slots, d});
  const at::Tensor offsets = at::tensor(plan.merge_offsets, at::kLong);
  const at::Tensor sources = at::tensor(plan.merge_sources, at::kLong);

  const double gather_s = TimeIt([&] { longqa::kernels::GatherRows(hbar, window_index); });
  Row("gather_rows (window gather)", gather_s, 2.0 * slots * d * 4, copy_bps);
  const double merge_s = TimeIt([&] { longqa::kernels::OverlapMerge(windows, offsets, sources); });
  Row("overlap_merge", merge_s, (double(sources.numel()) + rows) * d * 4, copy_bps);

  const at::Tensor centroids = at::randn({64, d});
  const double assign_s = TimeIt([&] { longqa::kernels::ClusterAssign(hbar, centroids); });
  Row("cluster_assign (C=64)", assign_s, (double(rows) * d + 64.0 * d) * 4 + rows * 8.0, copy_bps);
  const at::Tensor ids = longqa::kernels::ClusterAssign(hbar, centroids);
  const at::Tensor seg = at::tensor(std::vector<int64_t>{0, rows}, at::kLong);
  const double sort_s = TimeIt([&] { longqa::kernels::StableCountingSort(ids, seg, 64); });
  Row("stable_counting_sort", sort_s, 3.0 * rows * 8, copy_bps);
  const at::Tensor perm = longqa::kernels::StableCountingSort(ids, seg, 64);
  const longqa::ChunkPlan chunks = longqa::PlanChunks(plan.rows_begin, m);
  const at::Tensor sorted_to_slot = at::tensor(chunks.sorted_to_slot, at::kLong);
  at::Tensor chunk_index = at::full({chunks.num_chunks * m}, -1, at::kLong);
  chunk_index.index_put_({sorted_to_slot}, perm);
  const double permute_s = TimeIt([&] {
    at::Tensor ci = at::full({chunks.num_chunks * m}, -1, at::kLong);
    ci.index_put_({sorted_to_slot}, perm);
    longqa::kernels::GatherRows(hbar, ci);
  });
  Row("permute (index + gather)", permute_s, 2.0 * chunks.num_chunks * m * d * 4, copy_bps);
  const at::Tensor chunk_rows = at::randn({chunks.num_chunks * m, d});
  const double unpermute_s = TimeIt([&] {
    at::Tensor back = at::empty({rows}, at::kLong);
    back.index_put_({perm}, sorted_to_slot);
    longqa::kernels::GatherRows(chunk_rows, back);
  });
  Row("unpermute (index + gather)", unpermute_s, 2.0 * rows * d * 4, copy_bps);
  const at::Tensor qa = at::randn({x, 12, 27});
  const at::Tensor labels = at::randint(-1, 27, {85, 255}, at::kLong);
  const double rel_s = TimeIt([&] { longqa::kernels::RelativeLabelGather(qa, labels); });
  Row("relative_label_gather (ETC)", rel_s, double(x) * 12 * 255 * 4 * 2, copy_bps);

  // ETC's relative-label term on one chunk of long queries' local scores (r 84: blocks of 85, the
  // three neighbouring blocks' 255 keys, 27 labels, 8 blocks) with the label and slot tables
  // etc_plan.cc makes for an 8-block document, the CPU's row form beside the per-element core the
  // CUDA launcher runs.
  longqa::ModelConfig etc_config;
  etc_config.architecture = longqa::Architecture::kEtc;
  etc_config.etc.radius = 84;
  etc_config.etc.relative_clip = 12;
  const int64_t block = etc_config.etc.radius + 1, label_rows = 8 * block;
  const longqa::EtcRequestPlan etc_plan = longqa::PlanEtcRequest(
      etc_config, longqa::MakeEtcInput(etc_config, {7}, std::vector<int32_t>(label_rows, 9),
                                       std::vector<int64_t>(label_rows, 0), 1));
  const at::Tensor local_labels =
      at::tensor(etc_plan.local_labels, at::kLong).view({block, 3 * block});
  const at::Tensor block_index = at::tensor(etc_plan.block_index, at::kLong);
  for (const auto dtype : {at::kFloat, at::kBFloat16}) {
    const at::Tensor scores = at::randn({12, label_rows, 3 * block}).to(dtype);
    const at::Tensor label_qa = at::randn({12, label_rows, 27}).to(dtype);
    const double bytes = 2.0 * scores.numel() * scores.element_size();
    const bool bf16 = dtype == at::kBFloat16;
    const double row_s = TimeIt(
        [&] { longqa::kernels::EtcLabelBias(scores, label_qa, local_labels, 0, block_index); });
    Row(bf16 ? "etc_label_bias bf16" : "etc_label_bias fp32", row_s, bytes, copy_bps);
    const double element_s = TimeIt([&] {
      longqa::kernels::EtcLabelBiasByElement(scores, label_qa, local_labels, 0, block_index);
    });
    Row("  by element (CUDA's core)", element_s, bytes, copy_bps);
  }

  // One cluster layer's transformer on the chunks (d=768, 12 heads, FFN 3072).
  const longqa::ModelConfig config =
      longqa::ClusterFormerConfig(8000, d, 12, 3072, "SC", l, m, 64, 30);
  const longqa::TensorMap weights = longqa::RandomWeights(config, 1);
  const longqa::TransformerLayer layer(weights, longqa::LayerScope(1), config);
  const at::Tensor chunk_valid =
      at::tensor(std::vector<int64_t>(chunks.slot_valid.begin(), chunks.slot_valid.end()),
                 at::kLong)
          .view({chunks.num_chunks, m})
          .to(at::kBool);
  const at::Tensor chunk_input = chunk_rows.view({chunks.num_chunks, m, d});
  const double layer_s = TimeIt([&] { layer.Forward(chunk_input, chunk_valid); }, 3);
  const double overhead = assign_s + sort_s + permute_s + unpermute_s;
  std::printf(
      "\ncluster layer at %lld tokens (%lld H̄ rows, %lld chunks of %lld): transformer %.1f "
      "ms, clustering (assign + sort + permute + unpermute) %.1f ms = %.1f%% of the layer\n",
      static_cast<long long>(x), static_cast<long long>(rows),
      static_cast<long long>(chunks.num_chunks), static_cast<long long>(m), 1e3 * layer_s,
      1e3 * overhead, 100.0 * overhead / (overhead + layer_s));
  return 0;
}
