// longqa-train: trains a longqa model folder on gold JSONL examples (the demo model's trainer).
// Starts from --init_model (e.g. made by longqa-random-model) or resumes from the checkpoint in
// --out. Curriculum: the --stages files in order (shorter documents first); the next stage starts
// once the running training accuracy reaches --advance_accuracy. Cluster layers' centroids are
// refreshed from a memory bank of recent hidden states every --centroid_every steps
// (cluster_former_v2 Algorithm 1).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <cstdio>
#include <deque>
#include <numeric>
#include <random>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_split.h"
#include "model/engine.h"
#include "model/qa_model.h"
#include "model/safetensors.h"
#include "train/adamw.h"
#include "train/checkpoint.h"
#include "train/cluster_memory.h"
#include "train/dev_metrics.h"
#include "train/qa_loss.h"
#include "train/training_example.h"

ABSL_FLAG(std::string, init_model, "", "Model folder to start from when --out has no checkpoint");
ABSL_FLAG(std::string, out, "",
          "Checkpoint folder: written every --save_every steps; resumed from");
ABSL_FLAG(std::string, stages, "", "Comma-separated training JSONL files, in curriculum order");
ABSL_FLAG(std::string, stage_dev, "", "Comma-separated dev JSONL files, one per stage (optional)");
ABSL_FLAG(std::string, long_dev, "", "Dev JSONL of full-length documents, scored at every eval");
ABSL_FLAG(int64_t, steps, 2000, "Total optimizer steps");
ABSL_FLAG(int64_t, batch_tokens, 4096, "Document tokens per step (at least one example)");
ABSL_FLAG(int64_t, max_batch, 16, "Examples per step at most");
ABSL_FLAG(double, lr, 1e-3, "Peak learning rate");
ABSL_FLAG(int64_t, warmup, 200, "Linear warm-up steps");
ABSL_FLAG(double, weight_decay, 0.01, "AdamW weight decay");
ABSL_FLAG(double, advance_accuracy, 0.85, "Running accuracy that moves to the next stage");
ABSL_FLAG(int64_t, advance_window, 400, "Training examples the running accuracy covers");
ABSL_FLAG(int64_t, min_stage_steps, 200, "Steps in a stage before it can advance");
ABSL_FLAG(int64_t, max_stage_steps, 0, "Steps after which a stage advances anyway (0: never)");
ABSL_FLAG(int64_t, centroid_every, 100, "Steps between centroid refreshes (cluster layers)");
ABSL_FLAG(int64_t, memory, 20000, "Memory bank rows per cluster layer");
ABSL_FLAG(int64_t, eval_every, 500, "Steps between dev evaluations");
ABSL_FLAG(int64_t, eval_examples, 100, "Dev examples scored per dev file");
ABSL_FLAG(int64_t, save_every, 100, "Steps between checkpoints");
ABSL_FLAG(int64_t, log_every, 20, "Steps between log lines");
ABSL_FLAG(int, threads, 2, "Intra-op threads");
ABSL_FLAG(uint64_t, seed, 1, "Random seed (data order, K-Means)");

namespace longqa {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const absl::Status& status) {
  std::fprintf(stderr, "longqa-train: %s\n", std::string(status.message()).c_str());
  std::exit(1);
}

template <typename T>
T OrDie(absl::StatusOr<T> v) {
  if (!v.ok()) Die(v.status());
  return std::move(*v);
}

std::vector<std::string> SplitList(const std::string& s) {
  return absl::StrSplit(s, ',', absl::SkipEmpty());
}

// Warm-up, constant, then a linear decay to 10% over the last fifth of the run.
double LearningRate(int64_t step, int64_t steps, int64_t warmup, double peak) {
  if (step < warmup) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup);
  const int64_t decay_start = steps - steps / 5;
  if (step < decay_start) return peak;
  const double f = static_cast<double>(step - decay_start) / std::max<int64_t>(1, steps / 5);
  return peak * (1.0 - 0.9 * std::min(1.0, f));
}

// Shuffled passes over a stage's examples, cut into batches by a token budget.
class BatchSource {
 public:
  BatchSource(const std::vector<TrainingExample>* examples, uint64_t seed, int64_t batch_tokens,
              int64_t max_batch)
      : examples_(examples), rng_(seed), batch_tokens_(batch_tokens), max_batch_(max_batch) {}

  std::vector<const TrainingExample*> Next() {
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

 private:
  const std::vector<TrainingExample>* examples_;
  std::mt19937_64 rng_;
  int64_t batch_tokens_, max_batch_;
  std::vector<size_t> order_;
  size_t cursor_ = 0;
};

std::vector<QaModelInput> ModelInputs(const std::vector<const TrainingExample*>& batch) {
  std::vector<QaModelInput> inputs;
  for (const TrainingExample* ex : batch) {
    inputs.push_back({&ex->prepared.question_ids, &ex->prepared.document});
  }
  return inputs;
}

int Main() {
  const std::string out = absl::GetFlag(FLAGS_out);
  const std::vector<std::string> stages = SplitList(absl::GetFlag(FLAGS_stages));
  const std::vector<std::string> stage_dev = SplitList(absl::GetFlag(FLAGS_stage_dev));
  if (out.empty() || stages.empty())
    Die(absl::InvalidArgumentError("--out and --stages are required"));
  const int threads = absl::GetFlag(FLAGS_threads);
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  at::set_num_threads(threads);
  at::manual_seed(seed);

  const bool resume = HasTrainerState(out);
  const std::string model_dir = resume ? out : absl::GetFlag(FLAGS_init_model);
  if (model_dir.empty())
    Die(absl::InvalidArgumentError("no checkpoint in --out: give --init_model"));
  TrainerState state = resume ? OrDie(LoadTrainerState(out)) : TrainerState{};
  const ModelConfig config = OrDie(LoadModelConfig(model_dir + "/config.json"));
  TensorMap weights = OrDie(LoadWeights(model_dir + "/model.safetensors", config));
  TensorMap params;
  for (auto& [name, t] : weights) {
    if (name.find("centroids") == std::string::npos) params[name] = t.requires_grad_(true);
  }
  std::string error;
  auto tokenizer = Tokenizer::Load(model_dir + "/spm.model", &error);
  if (tokenizer == nullptr) Die(absl::InvalidArgumentError(error));
  // The engine shares the weight tensors: it tokenizes, and answers the dev sets as trained so far.
  const auto engine =
      OrDie(Engine::Create(config, weights, std::move(tokenizer), {threads, "cpu"}));
  const QaModel model(config, weights);
  AdamWOptions adam_options;
  adam_options.weight_decay = absl::GetFlag(FLAGS_weight_decay);
  AdamW optimizer(params, adam_options);
  if (resume) {
    const auto file = OrDie(SafetensorsFile::Open(out + "/optimizer.safetensors"));
    TensorMap moments;
    for (const auto& [name, entry] : file->entries()) moments[name] = OrDie(file->Read(name));
    if (const absl::Status s = optimizer.LoadState(moments, state.step); !s.ok()) Die(s);
  }
  std::printf("%s %s: %s model, layers %s, d %ld, %zu parameter tensors; stage %ld, step %ld\n",
              resume ? "resuming" : "starting", model_dir.c_str(),
              config.architecture == Architecture::kEtc ? "etc" : "cluster_former",
              config.layers.c_str(), static_cast<long>(config.hidden_size), params.size(),
              static_cast<long>(state.stage), static_cast<long>(state.step));

  const int64_t eval_examples = absl::GetFlag(FLAGS_eval_examples);
  std::vector<TrainingExample> long_dev;
  if (!absl::GetFlag(FLAGS_long_dev).empty()) {
    long_dev = OrDie(LoadTrainingExamples(absl::GetFlag(FLAGS_long_dev), *engine, eval_examples));
  }
  std::vector<TrainingExample> train, dev;
  std::unique_ptr<BatchSource> source;
  auto load_stage = [&](int64_t stage) {
    train = OrDie(LoadTrainingExamples(stages[stage], *engine));
    dev.clear();
    if (stage < static_cast<int64_t>(stage_dev.size())) {
      dev = OrDie(LoadTrainingExamples(stage_dev[stage], *engine, eval_examples));
    }
    source = std::make_unique<BatchSource>(&train, seed * 7919 + stage * 131 + state.stage_step,
                                           absl::GetFlag(FLAGS_batch_tokens),
                                           absl::GetFlag(FLAGS_max_batch));
    std::printf("stage %ld: %s (%zu examples)\n", static_cast<long>(stage), stages[stage].c_str(),
                train.size());
  };
  load_stage(state.stage);

  const bool clustered = config.layers.find('C') != std::string::npos;
  ClusterMemory memory(config, absl::GetFlag(FLAGS_memory));
  const ClusterFormerEncoder::ClusterLayerObserver observer =
      clustered ? ClusterFormerEncoder::ClusterLayerObserver(
                      [&memory](int64_t layer, const at::Tensor& hbar) {
                        memory.Observe(layer, hbar);
                        return true;
                      })
                : nullptr;
  const int64_t most_clusters =
      clustered ? *std::max_element(config.num_clusters.begin(), config.num_clusters.end()) : 0;
  if (clustered && !resume) {
    // Centroids from the initial model's states before the first step (Algorithm 1 line 1).
    at::NoGradGuard no_grad;
    while (memory.min_rows() < 50 * most_clusters)
      model.Forward(ModelInputs(source->Next()), at::kCPU, observer);
    std::printf("initial centroids: mean cosine %.3f\n", memory.Refresh(&weights, seed));
  }

  auto evaluate = [&] {
    const auto t0 = Clock::now();
    if (!dev.empty())
      std::printf("  dev  (stage %ld) %s\n", static_cast<long>(state.stage),
                  FormatKindScores(ScoreExamples(*engine, dev, 8)).c_str());
    if (!long_dev.empty())
      std::printf("  dev  (long)    %s\n",
                  FormatKindScores(ScoreExamples(*engine, long_dev, 4)).c_str());
    std::printf("  (eval %.0f s; long/answer accuracy per kind)\n",
                std::chrono::duration<double>(Clock::now() - t0).count());
    std::fflush(stdout);
  };

  const int64_t steps = absl::GetFlag(FLAGS_steps);
  const int64_t window = absl::GetFlag(FLAGS_advance_window);
  std::deque<std::pair<int64_t, int64_t>> recent;  // (all_correct, examples) per step
  int64_t recent_correct = 0, recent_examples = 0, tokens_since_log = 0;
  QaLossResult sum;
  double loss_sum = 0;
  int64_t steps_since_log = 0;
  auto log_start = Clock::now();
  const auto run_start = Clock::now();
  while (state.step < steps) {
    const std::vector<const TrainingExample*> batch = source->Next();
    for (const TrainingExample* ex : batch)
      tokens_since_log += static_cast<int64_t>(ex->prepared.document.ids.size());
    const QaLogits logits = model.Forward(ModelInputs(batch), at::kCPU, observer);
    const QaLossResult loss = ComputeQaLoss(logits, batch);
    optimizer.ZeroGrad();
    loss.total.backward();
    const double grad_norm = optimizer.ClipGradNorm(1.0);
    const double lr =
        LearningRate(state.step, steps, absl::GetFlag(FLAGS_warmup), absl::GetFlag(FLAGS_lr));
    optimizer.Step(lr);
    ++state.step;
    ++state.stage_step;
    state.examples_seen += loss.examples;

    loss_sum += loss.total.item<double>();
    ++steps_since_log;
    sum.examples += loss.examples;
    sum.type_correct += loss.type_correct;
    sum.long_targets += loss.long_targets;
    sum.long_correct += loss.long_correct;
    sum.span_targets += loss.span_targets;
    sum.span_correct += loss.span_correct;
    sum.all_correct += loss.all_correct;
    recent.emplace_back(loss.all_correct, loss.examples);
    recent_correct += loss.all_correct;
    recent_examples += loss.examples;
    while (recent_examples - recent.front().second >= window) {
      recent_correct -= recent.front().first;
      recent_examples -= recent.front().second;
      recent.pop_front();
    }
    const double running =
        static_cast<double>(recent_correct) / std::max<int64_t>(1, recent_examples);

    if (state.step % absl::GetFlag(FLAGS_log_every) == 0) {
      const double seconds = std::chrono::duration<double>(Clock::now() - log_start).count();
      auto ratio = [](int64_t a, int64_t b) { return b == 0 ? 0.0 : static_cast<double>(a) / b; };
      std::printf(
          "step %ld stage %ld  loss %.3f  train type %.2f long %.2f span %.2f all %.2f  running "
          "%.2f  lr %.1e  |g| %.2f  %.0f tok/s  %.0f min\n",
          static_cast<long>(state.step), static_cast<long>(state.stage), loss_sum / steps_since_log,
          ratio(sum.type_correct, sum.examples), ratio(sum.long_correct, sum.long_targets),
          ratio(sum.span_correct, sum.span_targets), ratio(sum.all_correct, sum.examples), running,
          lr, grad_norm, tokens_since_log / seconds,
          std::chrono::duration<double>(Clock::now() - run_start).count() / 60);
      std::fflush(stdout);
      sum = QaLossResult{};
      loss_sum = 0;
      steps_since_log = 0;
      tokens_since_log = 0;
      log_start = Clock::now();
    }
    if (clustered && state.step % absl::GetFlag(FLAGS_centroid_every) == 0 &&
        memory.min_rows() >= most_clusters) {
      std::printf("  centroids refreshed: mean cosine %.3f\n",
                  memory.Refresh(&weights, seed + state.step));
    }
    if (state.step % absl::GetFlag(FLAGS_eval_every) == 0) evaluate();
    const int64_t max_stage_steps = absl::GetFlag(FLAGS_max_stage_steps);
    const bool mastered = state.stage_step >= absl::GetFlag(FLAGS_min_stage_steps) &&
                          recent_examples >= window &&
                          running >= absl::GetFlag(FLAGS_advance_accuracy);
    const bool timed_out = max_stage_steps > 0 && state.stage_step >= max_stage_steps;
    const bool advance =
        state.stage + 1 < static_cast<int64_t>(stages.size()) && (mastered || timed_out);
    if (advance) {
      std::printf("stage %ld %s at step %ld (running accuracy %.2f)\n",
                  static_cast<long>(state.stage), mastered ? "mastered" : "ends (max_stage_steps)",
                  static_cast<long>(state.step), running);
      evaluate();
      ++state.stage;
      state.stage_step = 0;
      recent.clear();
      recent_correct = recent_examples = 0;
      load_stage(state.stage);
    }
    if (state.step % absl::GetFlag(FLAGS_save_every) == 0 || state.step == steps || advance) {
      const absl::Status s =
          SaveCheckpoint(out, config, weights, model_dir + "/spm.model", optimizer, state);
      if (!s.ok()) Die(s);
    }
  }
  if (state.step % absl::GetFlag(FLAGS_eval_every) != 0) evaluate();
  std::printf("done: %ld steps, %ld examples, checkpoint in %s\n", static_cast<long>(state.step),
              static_cast<long>(state.examples_seen), out.c_str());
  return 0;
}

}  // namespace
}  // namespace longqa

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Trains a longqa model: longqa-train --init_model DIR --out DIR --stages a.jsonl,b.jsonl");
  absl::ParseCommandLine(argc, argv);
  return longqa::Main();
}
