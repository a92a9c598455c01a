#!/usr/bin/env bash
# Trains a variant of the shipped English model on a lent GPU machine (no network, no packages)
# from the tarball of tests/gpu/stage_prebuilt.sh: first gpu_engine_test (a training step on CUDA
# against the CPU, among others), then the recipe of tools/train_minilm.sh with
# --device cuda (or, TRAINED=1, INIT_DIR is an already trained folder: only the data is made),
# or, NO_CURRICULUM=1, INIT_DIR is trained by the stages below alone (the curriculum's data made
# only for YESNO or EVAL),
# then (YESNO=1) tools/train_minilm_yesno.sh's stages, then (DRILL=1) tools/train_minilm_drill.sh
# (its env: LENGTHS, KINDS, EXAMPLES, ...), then (TWOHOP=1)
# tools/train_minilm_twohop.sh's two-hop-heavy stages, then (LONG=1)
# tools/train_minilm_long.sh's s4 stage of 4k-16k-token documents, then (EVAL=1)
# tools/ship_minilm.sh with the server on the GPU: the null threshold chosen on the 8k-32k-token
# dev set, the fp16 folder, and the test split scored at it. The machine's python3 has torch,
# numpy and safetensors, all that tools/ship_model.py needs.
# The data is generated there (tools/make_dataset.py needs only python3, and its seeds make the
# same bytes as here: OUT_DIR/md5sums.txt); the initial model comes along, fp16 as
# tools/ship_model.py writes it (the trainer reads weights into fp32).
# Out (the device tool returns at most 8 files of 16 MiB): OUT_DIR/<variant>.tar.part-* (the
# trained folder, weights in fp16, with its trainer state; `cat` the parts, then tar x),
# OUT_DIR/logs.tar (the trainer's logs, ship.log, md5sums.txt), eval.tar (ship_minilm.sh's eval
# folder), stage-eval.tar (EVAL with a run that kept its stage models: each scored on the 2k-8k
# dev set), gpu_engine_test.txt and summary.txt.
# Usage: tests/gpu/train_prebuilt.sh TARBALL INIT_DIR VARIANT OUT_DIR
#   env STEPS (default 2000), TRAINED, NO_CURRICULUM, YESNO, DRILL, DRILL_STEPS (default 4000),
#   TWOHOP, TWOHOP_STEPS (default 1500), SHORT_STEPS (train_minilm_twohop.sh's), LONG,
#   LONG_STEPS (default 400), EVAL, THREADS (default 8),
#   TRAIN_SECONDS (the time limit of all training, default 420: longqa-train --time_limit_s stops
#   with a checkpoint, which is what comes back), EVAL_SECONDS (default 240), DEVICE (default
#   cuda; cpu rehearses the script with a tarball of CPU programs), DEV_EXAMPLES / TEST_EXAMPLES
#   (tools/ship_minilm.sh's), STAGE_EVAL_SECONDS (default 120: the stage models' scoring)
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
init="$(cd "$2" && pwd)"
variant="$3"
out="$(mkdir -p "$4" && cd "$4" && pwd)"
# shellcheck source=tests/gpu/prebuilt_env.sh
source "$root/tests/gpu/prebuilt_env.sh" "$1"  # $pkg, $libs, run()
start=$SECONDS
say() { echo "[$((SECONDS - start)) s] $*" | tee -a "$out/summary.txt"; }

work="$pkg/minilm-train"
mkdir -p "$work/build/train" "$work/build/server" "$work/build/client"
if [ -n "${TRAINED:-}${NO_CURRICULUM:-}" ]; then
  cp -r "$init" "$work/$variant"
else
  cp -r "$init" "$work/init-$variant"
fi
# A BUILD folder for the tools/ scripts: each program with the package's library path.
for p in train/longqa-train server/longqa-server client/longqa; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$libs" "$pkg/bin/${p#*/}" \
    > "$work/build/$p"
  chmod +x "$work/build/$p"
done
export BUILD="$work/build" WORK="$work" PYTHON="$py" DEVICE="${DEVICE:-cuda}" THREADS="${THREADS:-8}"

# First the check that a training step on CUDA gives the CPU's loss, gradients and update.
run "$pkg/bin/gpu_engine_test" --gtest_brief=1 > "$out/gpu_engine_test.txt" 2>&1
say "gpu_engine_test: exit $? ($(grep -c '^\[  FAILED' "$out/gpu_engine_test.txt") failed)"
say "training $variant on $DEVICE: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1)"
limit="${TRAIN_SECONDS:-420}"
# A later stage's script, run with the training time left (its own --time_limit_s; the outer
# timeout bounds its steps after that); skipped with under 10 s left.
later_stage() {  # script, then its arguments
  local left=$((limit - (SECONDS - start)))
  if [ "$left" -le 10 ]; then
    say "$(basename "$1"): skipped, $left s of the training time left"
    return
  fi
  TRAIN_FLAGS="--time_limit_s $left" timeout "$((left + 30))" "$@"
  say "$(basename "$1"): exit $?"
}
if [ -z "${TRAINED:-}${NO_CURRICULUM:-}" ]; then
  VARIANTS="$variant" STEPS="${STEPS:-2000}" TRAIN_FLAGS="--time_limit_s $limit" \
    "$root/tools/train_minilm.sh" "$work"
  say "train_minilm.sh: exit $?; $(grep -c '^step' "$work/$variant.log") log lines"
elif [ -n "${TRAINED:-}${YESNO:-}${EVAL:-}" ]; then
  # The curriculum's data alone: a trained folder's later stages and EVAL read it (NO_CURRICULUM
  # with neither YESNO nor EVAL needs none).
  DATA_ONLY=1 "$root/tools/train_minilm.sh" "$work"
  say "train_minilm.sh (data only): exit $?"
fi
final="$work/$variant"
if [ -n "${YESNO:-}" ] && grep -q "\"step\": ${STEPS:-2000}\b" "$final/trainer_state.json"; then
  later_stage "$root/tools/train_minilm_yesno.sh" "$variant"
  for f in "$work/$variant-yesno" "$work/$variant-yesno-2" "$work/$variant-yesno-1"; do
    [ -s "$f/trainer_state.json" ] && { final="$f"; break; }
  done
fi

if [ -n "${DRILL:-}" ] && [ -s "$final/model.safetensors" ]; then
  STEPS="${DRILL_STEPS:-4000}" later_stage "$root/tools/train_minilm_drill.sh" "$(basename "$final")"
  say "drill dev (last): $(grep -a 'dev  (stage' "$final-drill.log" | tail -1)"
  [ -s "$final-drill/trainer_state.json" ] && final="$final-drill"
fi

if [ -n "${TWOHOP:-}" ] && [ -s "$final/model.safetensors" ]; then
  # The two-hop-heavy stages on whatever the steps above ended with.
  STEPS="${TWOHOP_STEPS:-1500}" later_stage "$root/tools/train_minilm_twohop.sh" "$(basename "$final")"
  [ -s "$final-twohop/trainer_state.json" ] && final="$final-twohop"
fi

if [ -n "${LONG:-}" ] && [ -s "$final/model.safetensors" ]; then
  # Stage s4 (4k-16k-token documents) on whatever the steps above ended with.
  STEPS="${LONG_STEPS:-400}" later_stage "$root/tools/train_minilm_long.sh" "$(basename "$final")"
  [ -s "$final-long/trainer_state.json" ] && final="$final-long"
fi

name="$(basename "$final")"
if [ -n "${EVAL:-}" ] && compgen -G "$final/stage-*" >/dev/null; then
  # The models kept as the final run's stages ended (longqa-train --keep_stage_models) and the
  # final one, on the 2k-8k-token dev set: which stage holds the most two-hop answers.
  SERVER_FLAGS="--device=$DEVICE" timeout "${STAGE_EVAL_SECONDS:-120}" \
    "$root/tools/eval_demo.sh" "$work/data/mid/dev.jsonl" "$work/stage-eval" "$final"/stage-* \
    "$final" > "$work/stage-eval.log" 2>&1
  say "stage models on the 2k-8k dev set (long F1: all, then two_hop): $(awk \
    '/^== /{name=$2; kind="all"} /^kind=/{kind=$1} /^long   all/{print name, kind, $NF}' \
    "$work/stage-eval.log" | grep -v 'kind=\(one_hop\|yes_no\|unans\)' | tr '\n' ' ')"
  tar -C "$work" --exclude='*.jsonl' -cf "$out/stage-eval.tar" stage-eval
fi
if [ -n "${EVAL:-}" ]; then
  # tools/ship_minilm.sh with the server on the GPU: the threshold on the 8k-32k dev set, the fp16
  # folder with it, fp16 against fp32 on dev, the test split per kind.
  SERVER_FLAGS="--device=$DEVICE" CHECKPOINTS="$(dirname "$final")" \
    timeout "${EVAL_SECONDS:-240}" "$root/tools/ship_minilm.sh" "$name" > "$work/ship.log" 2>&1
  say "ship_minilm.sh: exit $?; $(grep -a '^null threshold\|differ' "$work/ship.log" | tr '\n' ' ')"
  tar -C "$work/shipped" --exclude='*.jsonl' -cf "$out/eval.tar" eval  # not the gold sets
fi
(cd "$work/data" && md5sum ./*/*.jsonl) > "$work/md5sums.txt"
# The logs, whatever happened; then the folder: the shipped one (fp16, calibrated) or the
# checkpoint in fp16.
(cd "$work" && tar -cf "$out/logs.tar" ./*.log md5sums.txt)
back="$work/shipped/$name"
[ -s "$back/model.safetensors" ] || "$py" "$root/tools/ship_model.py" "$final" "$back"
cp "$final/trainer_state.json" "$back/"
say "folder $name: $(du -sh "$back" | cut -f1)"
tar -C "$work/shipped" -cf - "$name" | split -b 15M - "$out/$variant.tar.part-"
say "done"
