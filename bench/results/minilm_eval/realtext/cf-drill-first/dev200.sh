#!/usr/bin/env bash
# Session 63: the chain's choice (long + short F1 at the threshold calibrated on the first 100
# generated 8k-32k dev documents) made again on all 200 dev documents, for the kept model and the
# two runs of mixed120: is the choice itself within one round's run-to-run spread?
# Usage: dev200.sh NAME=CHECKPOINT...   (env W: the work folder, default build/mixed120: its
# data/long/dev.jsonl; reports land in W/eval/dev200 and beside this script as NAME-calib-dev200.txt)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../../.."
W="${W:-build/mixed120}"
for arg in "$@"; do
  name="${arg%%=*}" checkpoint="${arg#*=}"
  out="$W/dev200-$name"  # eval_demo.sh names the report after the folder
  [[ -s $out/model.safetensors ]] || .venv/bin/python tools/ship_model.py "$checkpoint" "$out" \
    --dtype f32 --answer_score=type+long
  [[ -s $W/eval/dev200/dev200-$name.txt ]] || THREADS=2 \
    EVAL_FLAGS="--calibrate_null --timeout_s=900" tools/eval_demo.sh "$W/data/long/dev.jsonl" \
    "$W/eval/dev200" "$out"
  cp "$W/eval/dev200/dev200-$name.txt" "$HERE/$name-calib-dev200.txt"
done
