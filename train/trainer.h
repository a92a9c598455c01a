// The trainer: starts from a model folder or resumes a checkpoint, and runs optimizer steps over
// a curriculum of stages, refreshing cluster centroids from a memory bank (cluster_former_v2
// Algorithm 1; docs/references.md), scoring dev sets and writing resumable checkpoints.
// longqa-train (train_main.cc) is its command line.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/engine.h"
#include "model/qa_model.h"
#include "train/adamw.h"
#include "train/batch_source.h"
#include "train/checkpoint.h"
#include "train/cluster_memory.h"
#include "train/curriculum.h"
#include "train/qa_loss.h"
#include "train/training_example.h"

namespace longqa {

struct TrainerOptions {
  std::string init_model;              // model folder to start from when `out` has no checkpoint
  std::string out;                     // checkpoint folder: written, and resumed from
  std::vector<std::string> stages;     // training JSONL files in curriculum order
  std::vector<std::string> stage_dev;  // dev JSONL per stage (optional)
  std::string long_dev;                // dev JSONL of full-length documents (optional)
  int64_t steps = 2000;
  int64_t batch_tokens = 4096;  // document tokens per step (at least one example)
  int64_t max_batch = 16;
  double lr = 1e-3;
  int64_t warmup = 200;
  double weight_decay = 0.01;
  CurriculumOptions curriculum;
  int64_t centroid_every = 100;    // steps between centroid refreshes
  int64_t memory = 100000;         // memory bank rows per cluster layer
  int64_t memory_per_pass = 1000;  // rows each forward pass adds, sampled (0: all): the bank
                                   // then spans the last memory / memory_per_pass passes
  // After the last step, centroids refitted in layer order on the final weights from this many
  // of the last stage's examples (longqa-centroids' procedure); 0: keep the last refresh.
  int64_t final_centroids = 20;
  int64_t eval_every = 500;
  int64_t eval_examples = 100;  // dev examples scored per dev file
  int64_t save_every = 100;
  bool keep_stage_models = false;  // a model folder <out>/stage-<N> at the end of each stage N
  int64_t log_every = 20;
  double time_limit_s = 0;  // > 0: stop (with a checkpoint) after the step that passes it
  // > 0: stop (with a checkpoint) once this step is done; the learning-rate schedule still runs
  // to `steps`, so a run stopped here equals a longer run's checkpoint at this step.
  int64_t stop_after = 0;
  int threads = 2;
  // ETC: each layer's graph rebuilt in backward (EtcEncoder::set_recompute_layers), so that
  // training at one segment token a paragraph fits memory; one more forward pass a step.
  bool recompute_layers = false;
  std::string device = "cpu";  // "cpu" or "cuda[:N]": weights, optimizer moments and the dev engine
  uint64_t seed = 1;
};

class Trainer {
 public:
  // Loads the model (the checkpoint in `out` when there is one), the optimizer state and the
  // current stage's data; prints the start line.
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(const TrainerOptions& options);

  // Steps until options.steps (or options.time_limit_s, options.stop_after), logging, refreshing
  // centroids, evaluating, advancing stages and saving checkpoints on the way.
  absl::Status Run();

  // One optimizer step on the next batch of the current stage.
  QaLossResult Step();

  const TrainerState& state() const { return state_; }

 private:
  explicit Trainer(const TrainerOptions& options);
  absl::Status LoadStage(int64_t stage);
  void InitialCentroids();
  // After the last step (cluster layers, final_centroids > 0): refits the centroids in place.
  absl::Status FinalCentroids();
  void Evaluate();
  void Log(const QaLossResult& loss, double grad_norm, double lr);

  TrainerOptions options_;
  std::string model_dir_;  // where the model came from (its tokenizer file is copied along)
  at::Device device_ = at::kCPU;
  bool resumed_ = false;
  TrainerState state_;
  ModelConfig config_;
  TensorMap weights_;  // shared with engine_ and model_: training updates both in place
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<QaModel> model_;
  std::unique_ptr<AdamW> optimizer_;
  std::unique_ptr<ClusterMemory> memory_;
  ClusterFormerEncoder::ClusterLayerObserver observer_;  // set for models with cluster layers
  int64_t most_clusters_ = 0;  // centroids of the largest cluster layer; 0: no cluster layer
  Curriculum curriculum_;
  std::vector<TrainingExample> train_, dev_, long_dev_;
  std::unique_ptr<BatchSource> source_;

  // Figures accumulated between log lines.
  QaLossResult since_log_;
  double loss_since_log_ = 0;
  int64_t steps_since_log_ = 0, tokens_since_log_ = 0;
  double log_start_seconds_ = 0, run_start_seconds_ = 0;
};

}  // namespace longqa
