#!/usr/bin/env bash
# Session 59: rebuild.sh's chain (letters drill, balanced long stage, hop long stage) trained on a
# lent GPU, several variants side by side, each in its own work folder build/gpu-<name>, then each
# served as it would ship (score_model.sh SERVED_ONLY=1, the server on the GPU: threshold on the
# first 100 8k-32k dev documents, the 200 test documents at it). The variant with the best dev
# long + short F1 comes back in bf16 (persist.sh's form, its `stage` file naming the last stage
# trained: "4 hls gpu-<name>" when every stage ran), xz'd in 15 MiB parts (the tool returns files
# of 16 MiB at most, and 8 files); every log and report in logs.tar.xz, the timeline in
# summary.txt.
# Runs THERE, from tests/gpu/stage_prebuilt.sh's tarball and a start packed with xz (models/ as a
# whole is too big to travel): models/demo (`tar -C models -cJf demo.tar.xz demo`: the chain from
# its drill) or a model this script returned (its parts joined: the stages after it, from its
# weights in fp32, as rebuild.sh restores a kept stage; set LDS=0 or HOP=0 to skip a stage):
#   gpu_chain.sh longqa-gpu.tar.xz START.tar.xz OUT SPEC...
# SPEC: name:KEY=V,KEY=V,... with DRILL_STEPS, DRILL_STAGE_STEPS, DRILL_EXAMPLES (letters-drill.sh),
# LDS (the balanced stage's steps), LDS2 (resumed to this many steps, as stage 3 resumes stage 2;
# equal to LDS: no second run), HOP, BALANCED, SEED (hop-long-stage.sh), REPLAY (the steps of a
# real-English round after them, replay-stage.sh: the chain's stage 5; it needs env REALTEXT, the
# round's mix packed here). Defaults: the CPU chain's (1000, 550, 4000, 150, 300, 110, 70, 58, and
# REPLAY 0: none).
# The GPU checks (tests/gpu/run_prebuilt.sh: kernels and engine on CUDA against the CPU, encoder
# bench, server) run first, about a minute, when the package has them (CHECKS=0: not).
# Env: TRAIN_S (seconds from the start by which every chain stops training: each stage gets what
# is left as longqa-train --time_limit_s, and one with under 15 s left is skipped; default 390),
# SCORE_S (seconds after that for scoring, default 150), DEVICE (default cuda; cpu to rehearse),
# THREADS (a chain's CPU threads, default 6), PYTHON (the python with torch, default python3),
# EVAL_ROWS (score only the first N documents of each set: a rehearsal on a CPU).
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../../.." || exit
pkgtar="$(realpath "$1")" start="$(realpath "$2")"
out="$(mkdir -p "$3" && cd "$3" && pwd)"
shift 3
logs="$(mktemp -d)"  # packed into OUT/logs.tar.xz at the end: OUT holds at most 6 files
export DEVICE="${DEVICE:-cuda}" THREADS="${THREADS:-6}"
TRAIN_S="${TRAIN_S:-390}" SCORE_S="${SCORE_S:-150}"
summary="$out/summary.txt"
note() { echo "[$SECONDS s] $*" | tee -a "$summary"; }
# shellcheck source=tests/gpu/prebuilt_env.sh
source tests/gpu/prebuilt_env.sh "$pkgtar"  # $pkg, $libs, $py, run()
# The chain's scripts call build/<dir>/<program> and .venv/bin/python: wrappers that give the
# programs the package's library path (python keeps the machine's own libraries). Never over a
# real build: a rehearsal on this machine runs in a copy of the tree.
if [[ -e build/CMakeCache.txt || -e .venv/pyvenv.cfg ]]; then
  echo "gpu_chain.sh: build/ or .venv/ here is real; run it in a copy of the tree" >&2
  exit 2
fi
for p in train/longqa-train server/longqa-server client/longqa; do
  mkdir -p "build/${p%/*}"
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$libs" "$pkg/bin/${p#*/}" > "build/$p"
  chmod +x "build/$p"
done
mkdir -p .venv/bin
printf '#!/bin/sh\nexec "%s" "$@"\n' "$(command -v "$py")" > .venv/bin/python
chmod +x .venv/bin/python
from="$(mktemp -d)"
tar -C "$from" -xJf "$start"
if [[ -d $from/demo ]]; then  # models/demo: the chain from its beginning
  [[ -s models/demo/model.safetensors ]] || { mkdir -p models && cp -r "$from/demo" models/; }
  from=""
else
  from="$from/cluster_former_minilm"
  note "starting from a returned model: $(cat "$from/stage")"
fi
note "longqa $(cat "$pkg/commit.txt"), device $DEVICE, $(nproc) cores"
if [[ ${CHECKS:-1} == 1 && -x $pkg/bin/kernels_test ]]; then  # a CUDA package: the checks first
  timeout 150 bash tests/gpu/run_prebuilt.sh "$pkgtar" "$logs/checks" > "$logs/checks.log" 2>&1
  note "tests/gpu/run_prebuilt.sh: exit $?"
  sed 's/^/  /' "$logs/checks/summary.txt" >> "$summary"
fi

chain() {  # name, settings: the four stages in build/gpu-<name>, then served on dev and test
  local name="$1" kv
  IFS=, read -ra kv <<< "$2"
  ((${#kv[@]} == 0)) || export "${kv[@]}"
  export W=build/gpu-$name TRAIN_ONLY=1 NAMES=letters
  local lds="${LDS:-150}" lds2="${LDS2:-300}" last=""
  left() { echo $((TRAIN_S - SECONDS)); }
  stage() {  # label, script, then its env: runs it with the time left, or says it was skipped
    local label="$1" script="$2" t0=$SECONDS
    shift 2
    if (($(left) < 15)); then
      note "$name $label: skipped (no time left)"
      return 1
    fi
    env "$@" TRAIN_FLAGS="--time_limit_s=$(left)" bash "$HERE/$script" \
      > "$logs/$name-$label.log" 2>&1
    local rc=$?
    note "$name $label: exit $rc in $((SECONDS - t0)) s"
    return $rc
  }
  if [[ -n $from ]]; then  # the data the skipped stages make, and the start in fp32
    {
      NO_INIT=1 PREPARE_ONLY=1 bash bench/results/minilm_eval/realtext/cf-from-round6/run.sh
      DATA_ONLY=1 bash "$HERE/balanced-long-stage.sh"
      "$py" tools/ship_model.py "$from" "$W/from" --dtype f32
    } > "$logs/$name-data.log" 2>&1 && last=from
    note "$name: data and start made (${last:-failed})"
  else
    stage drill letters-drill.sh NAME="gpu-$name-drill" && last=init-k256-drill
  fi
  local lds_start="$W/$last"  # the drill, or the returned model in fp32
  if [[ -n $last ]] && ((lds > 0)); then
    stage lds balanced-long-stage.sh START="$lds_start" OUT=lds STEPS="$lds" \
      NAME="gpu-$name-lds" && last=lds
  fi
  if [[ $last == lds ]] && ((lds2 > lds)); then
    cp -r "$W/lds" "$W/lds2"  # resumed from its checkpoint at step LDS: rebuild.sh's stage 3
    stage lds2 balanced-long-stage.sh START="$lds_start" OUT=lds2 STEPS="$lds2" \
      NAME="gpu-$name-lds2" && last=lds2
  fi
  if [[ $last == lds* || $last == from ]] && ((${HOP:-110} > 0)); then
    stage hls hop-long-stage.sh START="$W/$last" OUT=hls NAME="gpu-$name-hls" && last=hls
  fi
  if [[ -n $last ]] && ((${REPLAY:-0} > 0)); then
    stage replay replay-stage.sh START="$W/$last" STEPS="$REPLAY" && last=realtext/round
    cp "$W/realtext/round.log" "$logs/gpu-$name-replay-train.log" 2>/dev/null
  fi
  [[ -n $last ]] || return
  echo "$last" > "$W/last"
  local step="the start's"  # a start folder made from a returned model has no trainer state
  [[ ! -s $W/$last/trainer_state.json ]] ||
    step=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["step"])' \
      "$W/$last/trainer_state.json")
  note "$name: trained through $last, step $step"
  if [[ -n ${EVAL_ROWS:-} ]]; then  # a rehearsal: the first rows of each set only
    for gold in "$W/long100.jsonl" "$W/data/long/test.jsonl"; do
      head -n "$EVAL_ROWS" "$gold" > "$gold.head" && mv "$gold.head" "$gold"
    done
  fi
  local t0=$SECONDS limit=$((TRAIN_S + SCORE_S - SECONDS))
  SERVED_ONLY=1 SERVER_FLAGS="--device=$DEVICE" timeout $((limit > 60 ? limit : 60)) \
    bash "$HERE/score_model.sh" "gpu-$name" "$W/$last" > "$logs/$name-score.log" 2>&1
  note "$name scored: exit $? in $((SECONDS - t0)) s"
  sed -n 2p "$HERE/gpu-$name-calib-long100.txt" 2>/dev/null | tee -a "$summary"
  cp "$W/eval/calib/tl-gpu-$name.predictions.json" "$logs/gpu-$name-calib.predictions.json"
  cp "$W/eval/test/ship-gpu-$name.predictions.json" "$logs/gpu-$name-test.predictions.json"
}
names=()
for spec in "$@"; do
  settings=""
  [[ $spec != *:* ]] || settings="${spec#*:}"
  chain "${spec%%:*}" "$settings" &
  names+=("${spec%%:*}")
done
wait

# The best on dev (long + short F1 at its calibrated threshold) comes back in bf16.
best="" best_f1=-1
for name in "${names[@]}"; do
  f1=$(sed -n 's/.*chosen on this set: long F1 \([0-9.]*\) + short F1 \([0-9.]*\).*/\1 \2/p' \
    "$HERE/gpu-$name-calib-long100.txt" 2>/dev/null | awk '{print $1 + $2}')
  [[ -n $f1 ]] || continue
  if awk -v a="$f1" -v b="$best_f1" 'BEGIN {exit !(a > b)}'; then best=$name best_f1=$f1; fi
done
for name in "${names[@]}"; do cp "$HERE/gpu-$name"-* "$logs/" 2>/dev/null; done
tar -C "$logs" -cJf "$out/logs.tar.xz" .
W=build/gpu-$best
folder=$(cat "$W/last" 2>/dev/null)
if [[ -n $best && $folder != from ]]; then
  keep="$(mktemp -d)/cluster_former_minilm"
  "$py" tools/ship_model.py "$W/$folder" "$keep" --dtype bf16 --answer_score=type+long > /dev/null
  # shellcheck source=bench/results/minilm_eval/realtext/cf-drill-first/stages.sh
  source "$HERE/stages.sh"  # STAGE_FOLDERS: the stage each folder ends (lds2 is stage 3's)
  for stage in 1 2 3 4 5; do
    [[ ${STAGE_FOLDERS[$stage]} != "${folder/lds2/lds300}" ]] || break
  done
  echo "$stage $folder gpu-$best" > "$keep/stage"
  tar -C "$(dirname "$keep")" -cf - cluster_former_minilm | xz -T0 -6 |
    split -b 15M - "$out/model-gpu-$best.tar.xz.part-"
  parts=("$out"/model-*.part-*)
  note "returned: gpu-$best ($folder; dev long + short F1 $best_f1), ${#parts[@]} parts"
else
  note "no model returned (best on dev: ${best:-none scored}${folder:+, $folder})"
fi
