#include "train/trainer.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "model/format/model_folder.h"
#include "model/format/safetensors.h"
#include "tools/centroid_builder.h"
#include "train/dev_metrics.h"

namespace longqa {
namespace {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<QaModelInput> ModelInputs(const std::vector<const TrainingExample*>& batch) {
  std::vector<QaModelInput> inputs;
  for (const TrainingExample* ex : batch) {
    inputs.push_back({&ex->prepared.question_ids, &ex->prepared.document});
  }
  return inputs;
}

void Accumulate(const QaLossResult& loss, QaLossResult* sum) {
  sum->examples += loss.examples;
  sum->type_correct += loss.type_correct;
  sum->long_targets += loss.long_targets;
  sum->long_correct += loss.long_correct;
  sum->span_targets += loss.span_targets;
  sum->span_correct += loss.span_correct;
  sum->supporting_targets += loss.supporting_targets;
  sum->supporting_correct += loss.supporting_correct;
  sum->all_correct += loss.all_correct;
}

}  // namespace

Trainer::Trainer(const TrainerOptions& options)
    : options_(options), curriculum_(options.curriculum) {}

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const TrainerOptions& options) {
  if (options.out.empty() || options.stages.empty()) {
    return absl::InvalidArgumentError("--out and --stages are required");
  }
  // Each is a step count the trainer divides by (step % every): 0 would crash the run.
  for (const auto& [flag, every] :
       {std::pair<const char*, int64_t>{"eval_every", options.eval_every},
        {"save_every", options.save_every},
        {"centroid_every", options.centroid_every},
        {"log_every", options.log_every}}) {
    if (every < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, " must be at least 1 step (got ", every, ")"));
    }
  }
  std::unique_ptr<Trainer> t(new Trainer(options));
  at::set_num_threads(options.threads);
  at::manual_seed(options.seed);
  t->resumed_ = HasTrainerState(options.out);
  t->model_dir_ = t->resumed_ ? options.out : options.init_model;
  if (t->model_dir_.empty()) {
    return absl::InvalidArgumentError("no checkpoint in --out: give --init_model");
  }
  if (t->resumed_) {
    LONGQA_ASSIGN_OR_RETURN(t->state_, LoadTrainerState(options.out));
  }
  LONGQA_ASSIGN_OR_RETURN(ModelFolder folder, LoadModelFolder(t->model_dir_));
  t->config_ = folder.config;
  if (t->config_.qa_format != QaFormat::kNq) {
    // The losses need paragraph tokens (long answer) and merged windows: NQ-style models only.
    return absl::InvalidArgumentError(
        absl::StrCat(t->model_dir_, ": qa_format \"", QaFormatName(t->config_.qa_format),
                     "\" models are served as imported, not trained here; import with "
                     "tools/import_hf.py --qa_format nq to fine-tune"));
  }
  if (t->config_.layers.find_first_of("NKI") != std::string::npos) {
    // Their cluster assignments pass no gradient, and the papers' clustering losses (neural
    // clustering's L1/L2) are not implemented: these layer types serve, they do not train.
    return absl::InvalidArgumentError(absl::StrCat(
        t->model_dir_, ": layers \"", t->config_.layers,
        "\" has N, K or I layers, which longqa serves but does not train (docs/model-format.md)"));
  }
  absl::StatusOr<at::Device> device = ParseDevice(options.device);
  if (!device.ok()) {
    return absl::Status(device.status().code(),
                        absl::StrCat("--device: ", device.status().message()));
  }
  t->device_ = *device;
  t->weights_ = std::move(folder.weights);
  TensorMap params;
  for (auto& [name, tensor] : t->weights_) {
    // On the device before requires_grad: the leaves the optimizer updates live there.
    tensor = tensor.to(t->device_);
    if (name.find("centroids") == std::string::npos) params[name] = tensor.requires_grad_(true);
  }
  // The engine shares the weight tensors: it tokenizes, and answers the dev sets as trained so far.
  LONGQA_ASSIGN_OR_RETURN(t->engine_,
                          Engine::Create(t->config_, t->weights_, std::move(folder.tokenizer),
                                         {options.threads, options.device}));
  t->model_ = std::make_unique<QaModel>(t->config_, t->weights_);
  t->model_->set_recompute_layers(options.recompute_layers);
  AdamWOptions adam_options;
  adam_options.weight_decay = options.weight_decay;
  t->optimizer_ = std::make_unique<AdamW>(params, adam_options);
  if (t->resumed_) {
    LONGQA_ASSIGN_OR_RETURN(auto file,
                            SafetensorsFile::Open(ModelFilePath(options.out, kOptimizerFile)));
    TensorMap moments;
    for (const auto& [name, entry] : file->entries()) {
      LONGQA_ASSIGN_OR_RETURN(moments[name], file->Read(name));
    }
    LONGQA_RETURN_IF_ERROR(t->optimizer_->LoadState(moments, t->state_.step));
  }
  std::printf(
      "%s %s: %s model, layers %s, d %ld, %zu parameter tensors, on %s; stage %ld, step %ld\n",
      t->resumed_ ? "resuming" : "starting", t->model_dir_.c_str(),
      ArchitectureName(t->config_.architecture), t->config_.layers.c_str(),
      static_cast<long>(t->config_.hidden_size), params.size(), t->device_.str().c_str(),
      static_cast<long>(t->state_.stage), static_cast<long>(t->state_.step));
  if (!options.long_dev.empty()) {
    LONGQA_ASSIGN_OR_RETURN(
        t->long_dev_, LoadTrainingExamples(options.long_dev, *t->engine_, options.eval_examples));
  }
  LONGQA_RETURN_IF_ERROR(t->LoadStage(t->state_.stage));
  t->memory_ = std::make_unique<ClusterMemory>(t->config_, options.memory, options.memory_per_pass,
                                               options.seed);
  if (!t->config_.num_clusters.empty()) {
    t->most_clusters_ =
        *std::max_element(t->config_.num_clusters.begin(), t->config_.num_clusters.end());
    ClusterMemory* memory = t->memory_.get();
    t->observer_ = [memory](int64_t layer, const at::Tensor& hbar) {
      memory->Observe(layer, hbar);
      return true;
    };
    if (!t->resumed_) t->InitialCentroids();
  }
  return t;
}

absl::Status Trainer::LoadStage(int64_t stage) {
  LONGQA_ASSIGN_OR_RETURN(train_, LoadTrainingExamples(options_.stages[stage], *engine_));
  if (train_.empty()) {
    return absl::InvalidArgumentError(options_.stages[stage] + " holds no example");
  }
  dev_.clear();
  if (stage < static_cast<int64_t>(options_.stage_dev.size())) {
    LONGQA_ASSIGN_OR_RETURN(
        dev_, LoadTrainingExamples(options_.stage_dev[stage], *engine_, options_.eval_examples));
  }
  source_ =
      std::make_unique<BatchSource>(&train_, options_.seed * 7919 + stage * 131 + state_.stage_step,
                                    options_.batch_tokens, options_.max_batch);
  std::printf("stage %ld: %s (%zu examples)\n", static_cast<long>(stage),
              options_.stages[stage].c_str(), train_.size());
  return absl::OkStatus();
}

void Trainer::InitialCentroids() {
  // Centroids from the initial model's states before the first step (Algorithm 1 line 1).
  at::NoGradGuard no_grad;
  while (memory_->min_rows() < 50 * most_clusters_) {
    model_->Forward(ModelInputs(source_->Next()), device_, observer_);
  }
  std::printf("initial centroids from %ld rows: mean cosine %.3f\n",
              static_cast<long>(memory_->min_rows()), memory_->Refresh(&weights_, options_.seed));
}

absl::Status Trainer::FinalCentroids() {
  // Refitted in layer order on the final weights, as longqa-centroids does: a Cluster-Former's
  // centroids from its last refresh read 58 of 74 long-document answers right, refitted so 64-66
  // (docs/demo-model.md, session 50). The refreshes fit all cluster layers at once, from states
  // that the earlier layers' previous centroids shaped.
  std::vector<const PreparedRequest*> requests;
  for (const TrainingExample& ex : train_) {
    if (static_cast<int64_t>(requests.size()) == options_.final_centroids) break;
    requests.push_back(&ex.prepared);
  }
  CentroidOptions centroid_options;
  centroid_options.memory_rows = options_.memory;
  centroid_options.seed = options_.seed;
  LONGQA_ASSIGN_OR_RETURN(const double cosine,
                          FitCentroids(config_, &weights_, requests, device_, centroid_options));
  std::printf("final centroids from %zu examples of stage %ld, in layer order: mean cosine %.3f\n",
              requests.size(), static_cast<long>(state_.stage), cosine);
  return absl::OkStatus();
}

void Trainer::Evaluate() {
  const double t0 = NowSeconds();
  if (!dev_.empty()) {
    std::printf("  dev  (stage %ld) %s\n", static_cast<long>(state_.stage),
                FormatKindScores(ScoreExamples(*engine_, dev_, 8)).c_str());
  }
  if (!long_dev_.empty()) {
    std::printf("  dev  (long)    %s\n",
                FormatKindScores(ScoreExamples(*engine_, long_dev_, 4)).c_str());
  }
  std::printf("  (eval %.0f s; long/answer accuracy per kind)\n", NowSeconds() - t0);
  std::fflush(stdout);
}

QaLossResult Trainer::Step() {
  const std::vector<const TrainingExample*> batch = source_->Next();
  for (const TrainingExample* ex : batch) {
    tokens_since_log_ += static_cast<int64_t>(ex->prepared.document.ids.size());
  }
  const QaLogits logits = model_->Forward(ModelInputs(batch), device_, observer_);
  QaLossResult loss = ComputeQaLoss(logits, batch);
  optimizer_->ZeroGrad();
  loss.total.backward();
  const double grad_norm = optimizer_->ClipGradNorm(1.0);
  const double lr = LearningRate(state_.step, options_.steps, options_.warmup, options_.lr);
  optimizer_->Step(lr);
  ++state_.step;
  ++state_.stage_step;
  state_.examples_seen += loss.examples;
  curriculum_.Record(loss.all_correct, loss.examples);
  Log(loss, grad_norm, lr);
  return loss;
}

void Trainer::Log(const QaLossResult& loss, double grad_norm, double lr) {
  loss_since_log_ += loss.total.item<double>();
  ++steps_since_log_;
  Accumulate(loss, &since_log_);
  if (state_.step % options_.log_every != 0) return;
  const double now = NowSeconds();
  auto ratio = [](int64_t a, int64_t b) { return b == 0 ? 0.0 : static_cast<double>(a) / b; };
  const QaLossResult& s = since_log_;
  // The supporting-fact accuracy only where the model has the head and the data the targets.
  const std::string supporting =
      s.supporting_targets == 0
          ? ""
          : absl::StrFormat(" supporting %.2f", ratio(s.supporting_correct, s.supporting_targets));
  std::printf(
      "step %ld stage %ld  loss %.3f  train type %.2f long %.2f span %.2f all %.2f%s  running "
      "%.2f  lr %.1e  |g| %.2f  %.0f tok/s  %.0f min\n",
      static_cast<long>(state_.step), static_cast<long>(state_.stage),
      loss_since_log_ / steps_since_log_, ratio(s.type_correct, s.examples),
      ratio(s.long_correct, s.long_targets), ratio(s.span_correct, s.span_targets),
      ratio(s.all_correct, s.examples), supporting.c_str(), curriculum_.running_accuracy(), lr,
      grad_norm, tokens_since_log_ / std::max(1e-9, now - log_start_seconds_),
      (now - run_start_seconds_) / 60);
  std::fflush(stdout);
  since_log_ = QaLossResult{};
  loss_since_log_ = 0;
  steps_since_log_ = tokens_since_log_ = 0;
  log_start_seconds_ = now;
}

absl::Status Trainer::Run() {
  run_start_seconds_ = log_start_seconds_ = NowSeconds();
  while (state_.step < options_.steps) {
    Step();
    const bool last_step = state_.step == options_.steps;
    if (last_step && most_clusters_ > 0 && options_.final_centroids > 0) {
      // In place of a last refresh, before the last evaluation and the last save.
      LONGQA_RETURN_IF_ERROR(FinalCentroids());
    } else if (most_clusters_ > 0 && state_.step % options_.centroid_every == 0 &&
               memory_->min_rows() >= most_clusters_) {
      std::printf("  centroids refreshed from %ld rows: mean cosine %.3f\n",
                  static_cast<long>(memory_->min_rows()),
                  memory_->Refresh(&weights_, options_.seed + state_.step));
    }
    if (state_.step % options_.eval_every == 0) Evaluate();
    const bool last_stage = state_.stage + 1 >= static_cast<int64_t>(options_.stages.size());
    const Curriculum::Decision decision = curriculum_.Decide(state_.stage_step, last_stage);
    const bool advance = decision != Curriculum::Decision::kStay;
    if (advance) {
      std::printf(
          "stage %ld %s at step %ld (running accuracy %.2f)\n", static_cast<long>(state_.stage),
          decision == Curriculum::Decision::kMastered ? "mastered" : "ends (max_stage_steps)",
          static_cast<long>(state_.step), curriculum_.running_accuracy());
      Evaluate();
      if (options_.keep_stage_models) {
        const std::string kept = absl::StrCat(options_.out, "/stage-", state_.stage);
        LONGQA_RETURN_IF_ERROR(SaveModelFolder(kept, config_, weights_, model_dir_, state_.step));
        std::printf("stage %ld model kept in %s (step %ld)\n", static_cast<long>(state_.stage),
                    kept.c_str(), static_cast<long>(state_.step));
      }
      ++state_.stage;
      state_.stage_step = 0;
      curriculum_.Reset();
      LONGQA_RETURN_IF_ERROR(LoadStage(state_.stage));
    }
    const bool out_of_time =
        options_.time_limit_s > 0 && NowSeconds() - run_start_seconds_ > options_.time_limit_s;
    const bool stop_here = options_.stop_after > 0 && state_.step == options_.stop_after;
    if (state_.step % options_.save_every == 0 || last_step || advance || out_of_time ||
        stop_here) {
      LONGQA_RETURN_IF_ERROR(
          SaveCheckpoint(options_.out, config_, weights_, model_dir_, *optimizer_, state_));
    }
    if (stop_here && !last_step) break;  // evaluated and reported below, as at the end
    if (out_of_time) {
      // A clean stop: the checkpoint above resumes exactly here (a killed run loses the steps
      // since its last save, or the checkpoint being written).
      std::printf("time limit %.0f s reached at step %ld; checkpoint in %s\n",
                  options_.time_limit_s, static_cast<long>(state_.step), options_.out.c_str());
      return absl::OkStatus();
    }
  }
  if (state_.step % options_.eval_every != 0) Evaluate();
  if (state_.step < options_.steps) {
    std::printf("stopped after step %ld of %ld (--stop_after); checkpoint in %s\n",
                static_cast<long>(state_.step), static_cast<long>(options_.steps),
                options_.out.c_str());
  } else {
    std::printf("done: %ld steps, %ld examples, checkpoint in %s\n", static_cast<long>(state_.step),
                static_cast<long>(state_.examples_seen), options_.out.c_str());
  }
  return absl::OkStatus();
}

}  // namespace longqa
