// longqa-train: trains a longqa model folder on gold JSONL examples (train/trainer.h). Starts from
// --init_model (e.g. made by longqa-random-model) or resumes from the checkpoint in --out.
// Curriculum: the --stages files in order (shorter documents first); the next stage starts once
// the running training accuracy reaches --advance_accuracy. Cluster layers' centroids are
// refreshed from a memory bank of recent hidden states every --centroid_every steps.
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_split.h"
#include "model/compute_info.h"
#include "train/trainer.h"

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
ABSL_FLAG(int64_t, memory, 100000, "Memory bank rows per cluster layer");
ABSL_FLAG(int64_t, memory_per_pass, 1000,
          "Rows of each training forward pass added to a cluster layer's memory bank, drawn at "
          "random (0: all), so that the bank spans memory / memory_per_pass passes, not the last "
          "long document");
ABSL_FLAG(int64_t, final_centroids, 20,
          "After the last step, refit the cluster layers' centroids in layer order on the final "
          "weights from this many of the last stage's examples, as longqa-centroids does (0: keep "
          "the last refresh)");
ABSL_FLAG(int64_t, eval_every, 500, "Steps between dev evaluations");
ABSL_FLAG(int64_t, eval_examples, 100, "Dev examples scored per dev file");
ABSL_FLAG(int64_t, save_every, 100, "Steps between checkpoints");
ABSL_FLAG(bool, keep_stage_models, false,
          "At the end of each stage, keep a servable copy of the model (no optimizer state) in "
          "<out>/stage-<N>, so that a later stage cannot lose what an earlier one learned");
ABSL_FLAG(int64_t, log_every, 20, "Steps between log lines");
ABSL_FLAG(double, time_limit_s, 0,
          "Stop after the step that passes this many seconds, with a checkpoint (0: no limit)");
ABSL_FLAG(int64_t, stop_after, 0,
          "Stop, with a checkpoint and a dev evaluation, once this step is done; the learning "
          "rate still follows --steps' schedule, so the checkpoint equals that of a run of "
          "--steps at this step (0: run to --steps)");
ABSL_FLAG(int, threads, 2, "Intra-op threads");
ABSL_FLAG(bool, recompute_layers, false,
          "ETC: rebuild each layer's graph in backward instead of keeping it (memory of one "
          "layer's global-local scores, not all; one more forward pass a step)");
ABSL_FLAG(std::string, device, "cpu", "Where to train: cpu or cuda[:N] (CUDA builds)");
ABSL_FLAG(uint64_t, seed, 1, "Random seed (data order, K-Means)");

namespace longqa {
namespace {

std::vector<std::string> SplitList(const std::string& s) {
  return absl::StrSplit(s, ',', absl::SkipEmpty());
}

TrainerOptions OptionsFromFlags() {
  TrainerOptions o;
  o.init_model = absl::GetFlag(FLAGS_init_model);
  o.out = absl::GetFlag(FLAGS_out);
  o.stages = SplitList(absl::GetFlag(FLAGS_stages));
  o.stage_dev = SplitList(absl::GetFlag(FLAGS_stage_dev));
  o.long_dev = absl::GetFlag(FLAGS_long_dev);
  o.steps = absl::GetFlag(FLAGS_steps);
  o.batch_tokens = absl::GetFlag(FLAGS_batch_tokens);
  o.max_batch = absl::GetFlag(FLAGS_max_batch);
  o.lr = absl::GetFlag(FLAGS_lr);
  o.warmup = absl::GetFlag(FLAGS_warmup);
  o.weight_decay = absl::GetFlag(FLAGS_weight_decay);
  o.curriculum.advance_accuracy = absl::GetFlag(FLAGS_advance_accuracy);
  o.curriculum.window = absl::GetFlag(FLAGS_advance_window);
  o.curriculum.min_stage_steps = absl::GetFlag(FLAGS_min_stage_steps);
  o.curriculum.max_stage_steps = absl::GetFlag(FLAGS_max_stage_steps);
  o.centroid_every = absl::GetFlag(FLAGS_centroid_every);
  o.memory = absl::GetFlag(FLAGS_memory);
  o.memory_per_pass = absl::GetFlag(FLAGS_memory_per_pass);
  o.final_centroids = absl::GetFlag(FLAGS_final_centroids);
  o.eval_every = absl::GetFlag(FLAGS_eval_every);
  o.eval_examples = absl::GetFlag(FLAGS_eval_examples);
  o.save_every = absl::GetFlag(FLAGS_save_every);
  o.keep_stage_models = absl::GetFlag(FLAGS_keep_stage_models);
  o.log_every = absl::GetFlag(FLAGS_log_every);
  o.time_limit_s = absl::GetFlag(FLAGS_time_limit_s);
  o.stop_after = absl::GetFlag(FLAGS_stop_after);
  o.threads = absl::GetFlag(FLAGS_threads);
  o.recompute_layers = absl::GetFlag(FLAGS_recompute_layers);
  o.device = absl::GetFlag(FLAGS_device);
  o.seed = absl::GetFlag(FLAGS_seed);
  return o;
}

int Main() {
  absl::StatusOr<std::unique_ptr<Trainer>> trainer = Trainer::Create(OptionsFromFlags());
  absl::Status status = trainer.ok() ? (*trainer)->Run() : trainer.status();
  if (!status.ok()) {
    std::fprintf(stderr, "longqa-train: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace longqa

int main(int argc, char** argv) {
  longqa::RunWithBestBlasKernels(argv);  // OpenBLAS kernels for this CPU: may run main again
  longqa::PreferAvx512Kernels(longqa::CpuIsa());  // before LibTorch's first kernel call
  absl::SetProgramUsageMessage(
      "Trains a longqa model: longqa-train --init_model DIR --out DIR --stages a.jsonl,b.jsonl");
  absl::ParseCommandLine(argc, argv);
  return longqa::Main();
}
