// Encoder throughput: tokens/s of a sliding-window-only model, a Cluster-Former model (d=768, 12
// heads, FFN 3072, 12 layers, l=256, m=224), the same plan with neural clustering (nca),
// clustered (clustered) or improved clustered (iclustered) attention in place of its C layers,
// and an ETC model (same dims, r=84, k=12, one global segment token per 64-token paragraph) at
// 1k to 32k context tokens,
// next to the fp32 GEMM rate measured in the same run. A flat tokens/s across lengths shows that
// nothing grows quadratically with document length.
//
// Usage: longqa-encoder-bench [--min_tokens=1024] [--max_tokens=32768] [--threads=N]
//                             [--layers=12] [--device=cuda] [--batch=N]
//                             [--models=sliding,cluster,nca,clustered,iclustered,etc,unfused,
//                                       etc-avx2,etc-libtorch]
//                             [--precision=fp32|bf16|int8]
// unfused / etc-libtorch: the sliding-window layers' training path, ETC's LibTorch attention in
// place of the fused CPU kernels (a before/after in one run); etc-avx2: ETC's fused kernels in
// their AVX2 form (fp32) on an AVX-512 CPU.
// "of GEMM" is against the fp32 GEMM, or the bf16 GEMM for --precision=bf16.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model/compute_info.h"
#include "model/cpu_quota.h"
#include "model/encoders/cluster_former.h"
#include "model/encoders/etc_encoder.h"
#include "model/encoders/window_plan.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Waits for the device (a GPU runs asynchronously) by reading one value back.
void Sync(const at::Tensor& t) { t.sum().item<float>(); }

double GemmGflops(const at::Device& device, at::ScalarType dtype = at::kFloat) {
  const at::Tensor a = at::randn({2048, 2048}).to(device, dtype);
  const at::Tensor b = at::randn({2048, 2048}).to(device, dtype);
  Sync(at::matmul(a, b));  // warm-up
  const auto start = Clock::now();
  const int reps = device.is_cuda() ? 50 : 5;
  at::Tensor c;
  for (int i = 0; i < reps; ++i) c = at::matmul(a, b);
  Sync(c);
  return reps * 2.0 * 2048.0 * 2048.0 * 2048.0 / Seconds(start) / 1e9;
}

longqa::TensorMap OnDevice(longqa::TensorMap weights, const at::Device& device) {
  for (auto& [name, t] : weights) t = t.to(device);
  return weights;
}

// Dense FLOPs of the layers actually run: projections + FFN per row, attention per row and the
// keys it meets (a window, a chunk of m, two blocks of N/k, or C cluster rows [+ top-k keys]).
// One request per plan row range; `clusters` is the N layers' k.
double EncoderFlops(const longqa::ModelConfig& c, const longqa::WindowPlan& plan,
                    int64_t clusters) {
  const double d = c.hidden_size, ffn = c.intermediate_size;
  const double per_row = 2.0 * (4 * d * d + 2 * d * ffn);
  const double request_rows = double(plan.num_rows) / (plan.rows_begin.size() - 1);
  double flops = 0;
  for (char kind : c.layers) {
    const double rows = kind == 'S' ? double(plan.num_windows) * plan.window_len : plan.num_rows;
    double keys = kind == 'S' ? plan.window_len : c.stride_tokens;
    if (kind == 'N') keys = 2.0 * std::ceil(request_rows / clusters);
    if (kind == 'K' || kind == 'I') {
      keys = std::min<double>(c.clustered.clusters, request_rows) +
             (kind == 'I' ? c.clustered.topk : 0);
    }
    flops += rows * (per_row + 4.0 * keys * d);
  }
  return flops;
}

std::set<std::string> Split(const std::string& list) {
  std::set<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.insert(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  longqa::RunWithBestBlasKernels(argv);  // OpenBLAS kernels for this CPU: may run main again
  longqa::PreferAvx512Kernels(longqa::CpuIsa());  // before LibTorch's first kernel call
  int64_t min_tokens = 1024;
  int64_t max_tokens = 32768;
  int threads = longqa::ThisProcessCpuQuota().usable_cpus;  // as the server's --threads=0
  int num_layers = 12;
  std::string device_name = "cpu";
  std::string model_list = "sliding,cluster,etc";
  longqa::Precision precision = longqa::Precision::kFp32;
  int64_t batch = 1;  // the tokens of a row are split over this many requests run as one batch
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--min_tokens=", 13) == 0)
      min_tokens = std::atoll(argv[i] + 13);
    else if (std::strncmp(argv[i], "--max_tokens=", 13) == 0)
      max_tokens = std::atoll(argv[i] + 13);
    else if (std::strncmp(argv[i], "--threads=", 10) == 0)
      threads = std::atoi(argv[i] + 10);
    else if (std::strncmp(argv[i], "--layers=", 9) == 0)
      num_layers = std::atoi(argv[i] + 9);
    else if (std::strncmp(argv[i], "--device=", 9) == 0)
      device_name = argv[i] + 9;
    else if (std::strncmp(argv[i], "--models=", 9) == 0)
      model_list = argv[i] + 9;
    else if (std::strncmp(argv[i], "--precision=", 12) == 0 && longqa::ParsePrecision(argv[i] + 12))
      precision = *longqa::ParsePrecision(argv[i] + 12);
    else if (std::strncmp(argv[i], "--batch=", 8) == 0)
      batch = std::max<int64_t>(1, std::atoll(argv[i] + 8));
    else {
      std::fprintf(
          stderr,
          "usage: %s [--min_tokens=N] [--max_tokens=N] [--threads=N] [--layers=N] [--device=D] "
          "[--models=sliding,cluster,nca,clustered,iclustered,etc,unfused,etc-avx2,etc-libtorch] "
          "[--precision=fp32|bf16|int8] "
          "[--batch=N]\n",
          argv[0]);
      return 2;
    }
  }
  const std::set<std::string> models = Split(model_list);
  at::set_num_threads(threads);
  at::InferenceMode guard;
  const at::Device device(device_name);
  const double fp32_gemm = GemmGflops(device);
  const bool bf16 = precision == longqa::Precision::kBf16;
  const double gemm = bf16 ? GemmGflops(device, at::kBFloat16) : fp32_gemm;
  const longqa::ComputeInfo compute = longqa::DescribeCompute();
  std::printf("device=%s threads=%d  fp32 GEMM 2048^3: %.1f GFLOP/s", device.str().c_str(), threads,
              fp32_gemm);
  if (bf16) std::printf("  bf16 GEMM 2048^3: %.1f GFLOP/s", gemm);
  std::printf("  (%s)\n", longqa::ComputeInfoLine(compute).c_str());
  if (!compute.warning.empty()) std::printf("WARNING: %s\n", compute.warning.c_str());
  if (bf16 && device.is_cpu() && !longqa::Bf16Warning(compute.isa).empty()) {
    std::printf("WARNING: %s\n", longqa::Bf16Warning(compute.isa).c_str());
  }
  // Rows say their precision unless it is fp32: "sliding-window-bf16".
  const std::string suffix = precision == longqa::Precision::kFp32
                                 ? ""
                                 : std::string("-") + longqa::PrecisionName(precision);
  std::printf("\n");
  std::printf("%-20s %8s %8s %10s %12s %10s %8s\n", "model", "tokens", "windows", "seconds",
              "tokens/s", "GFLOP/s", "of GEMM");

  std::string sliding(num_layers, 'S');
  std::string cluster = sliding;  // cluster layers in the upper half, as in the paper's QA setup
  cluster[num_layers * 5 / 8] = 'C';
  cluster[num_layers * 7 / 8] = 'C';
  // Centroids of the C and N layers (N: blocks of N/64 rows, about sqrt(N) at 4k tokens).
  constexpr int64_t kClusters = 64;
  auto with_cluster_layers = [&](char kind) {
    std::string plan = cluster;
    for (char& c : plan) c = c == 'C' ? kind : c;
    return plan;
  };
  std::vector<std::pair<std::string, std::string>> plans;
  if (models.count("sliding")) plans.push_back({"sliding-window", sliding});
  if (models.count("cluster")) plans.push_back({"cluster-former", cluster});
  // The papers' other attention families in the cluster layers' places (docs/model-format.md).
  if (models.count("nca")) plans.push_back({"neural-cluster", with_cluster_layers('N')});
  if (models.count("clustered")) plans.push_back({"clustered", with_cluster_layers('K')});
  if (models.count("iclustered")) plans.push_back({"i-clustered", with_cluster_layers('I')});
  // The layers' training path (separate Q, K, V GEMMs, no in-place updates): what every row ran
  // before the inference path, for a before/after in one run.
  if (models.count("unfused")) plans.push_back({"sliding-unfused", sliding});
  for (const auto& [name, layers] : plans) {
    const longqa::ModelConfig config = longqa::ClusterFormerConfig(
        /*vocab_size=*/8000, /*hidden_size=*/768, /*num_heads=*/12, /*intermediate_size=*/3072,
        layers, /*window_tokens=*/256, /*stride_tokens=*/224, /*clusters_per_layer=*/kClusters,
        /*max_question_tokens=*/30);
    longqa::TensorMap weights = OnDevice(longqa::RandomWeights(config, 1), device);
    // Weights that require grad keep a layer off its inference path (transformer_layer.h).
    if (name == "sliding-unfused") {
      for (auto& [weight_name, t] : weights) t.requires_grad_(true);
    }
    const longqa::ClusterFormerEncoder encoder(config, weights, precision);
    for (int64_t tokens = min_tokens; tokens <= max_tokens; tokens *= 2) {
      std::vector<longqa::WindowInput> inputs(batch);
      for (int64_t r = 0; r < batch; ++r) {
        inputs[r].question.assign(20, 7);
        for (int64_t t = 0; t < tokens / batch; ++t) inputs[r].context.push_back(5 + t % 7000);
      }
      const longqa::WindowPlan plan = longqa::PlanWindows(inputs, 256, 224, 1);
      if (tokens == min_tokens) Sync(encoder.Forward(plan, device));  // warm-up
      const auto start = Clock::now();
      Sync(encoder.Forward(plan, device));
      const double s = Seconds(start);
      const double gflops = EncoderFlops(config, plan, kClusters) / s / 1e9;
      const std::string row = name + suffix;
      std::printf("%-20s %8lld %8lld %10.3f %12.0f %10.1f %7.0f%%\n", row.c_str(),
                  static_cast<long long>(tokens), static_cast<long long>(plan.num_windows), s,
                  tokens / s, gflops, 100.0 * gflops / gemm);
      std::fflush(stdout);
    }
  }
  if (!models.count("etc") && !models.count("etc-avx2") && !models.count("etc-libtorch")) return 0;
  longqa::ModelConfig etc = longqa::ClusterFormerConfig(
      8000, 768, 12, 3072, std::string(num_layers, 'E'), 256, 224, 0, 30);
  etc.architecture = longqa::Architecture::kEtc;
  etc.etc.radius = 84;
  etc.etc.relative_clip = 12;
  const longqa::TensorMap etc_weights = OnDevice(longqa::RandomWeights(etc, 1), device);
  longqa::EtcEncoder etc_encoder(etc, etc_weights, longqa::kEtcScoreBudget, precision);
  // "etc-libtorch": the same encoder with LibTorch's chunked attention instead of the fused CPU
  // kernels, "etc-avx2" with their AVX2 form (on AVX-512 CPUs too), for before/afters in one run.
  std::vector<std::pair<std::string, longqa::EtcCpuAttention>> etc_rows;
  if (models.count("etc")) etc_rows.push_back({"etc", longqa::EtcCpuAttention::kFused});
  if (models.count("etc-avx2"))
    etc_rows.push_back({"etc-avx2", longqa::EtcCpuAttention::kFusedAvx2});
  if (models.count("etc-libtorch")) {
    etc_rows.push_back({"etc-libtorch", longqa::EtcCpuAttention::kLibTorch});
  }
  for (const auto& [etc_name, form] : etc_rows) {
    etc_encoder.set_cpu_attention(form);
    for (int64_t tokens = min_tokens; tokens <= max_tokens; tokens *= 2) {
      std::vector<int32_t> ids(tokens);
      std::vector<int64_t> paragraph(tokens);
      for (int64_t t = 0; t < tokens; ++t) {
        ids[t] = t % 64 == 0 ? etc.special.paragraph : static_cast<int32_t>(5 + t % 7000);
        paragraph[t] = t / 64;
      }
      const longqa::EtcInput input = longqa::MakeEtcInput(etc, std::vector<int32_t>(20, 7), ids,
                                                          paragraph, (tokens + 63) / 64);
      if (tokens == min_tokens) Sync(etc_encoder.Forward({input}, device).long_states);  // warm-up
      const auto start = Clock::now();
      Sync(etc_encoder.Forward({input}, device).long_states);
      const double s = Seconds(start);
      // Dense rows: long + global; attention: l2l over 3(r+1) keys plus all globals, globals over
      // all.
      const double d = 768, ffn = 3072, n_g = input.global_ids.size(), n_l = tokens;
      const double per_row = 2.0 * (4 * d * d + 2 * d * ffn);
      const double attention = 4.0 * d * (n_l * (3 * 85 + n_g) + n_g * (n_g + n_l));
      const double gflops = num_layers * ((n_l + n_g) * per_row + attention) / s / 1e9;
      std::printf("%-20s %8lld %8d %10.3f %12.0f %10.1f %7.0f%%\n", (etc_name + suffix).c_str(),
                  static_cast<long long>(tokens), 1, s, tokens / s, gflops, 100.0 * gflops / gemm);
      std::fflush(stdout);
    }
  }
  return 0;
}
