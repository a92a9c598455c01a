#!/usr/bin/env bash
# Session 56: weight-space ensembles (interpolate.py) of session 51's start folder (models/demo in
# fp32, layers SSCSSC: reads the test split's held-out names, session 54) and the letters drill +
# 150 long steps (letters-drill.sh, then balanced-long-stage.sh: the hop, but a third of one-hop
# nulled on the test split), each with its centroids fitted again by longqa-centroids on 15
# 4k-16k-token training documents, then score_model.sh (SERVED_ONLY: threshold calibrated on the
# first 100 8k-32k dev documents and the test split served; FORCED=1 every answer forced too).
# Usage: wise.sh ALPHA...   (ALPHA: the fine-tuned model's share; env W, START, END)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../../.."
export W="${W:-build/cf-r10}"
START="${START:-$W/init-k256}" END="${END:-$W/lds}"
served_only=1
[[ -z "${FORCED:-}" ]] || served_only=""
[[ -s $W/centroid-corpus.jsonl ]] || head -n 15 $W/data/s4/train.jsonl > $W/centroid-corpus.jsonl
for alpha in "$@"; do
  out=$W/wise-$alpha
  if [[ ! -s $out/model.safetensors ]]; then
    .venv/bin/python "$HERE/interpolate.py" "$START" "$END" "$alpha" "$out.tmp"
    build/tools/longqa-centroids --model_dir="$out.tmp" --corpus=$W/centroid-corpus.jsonl \
      --threads=2
    rm -rf "$out" && mv "$out.tmp" "$out"
  fi
  SERVED_ONLY="$served_only" bash "$HERE/score_model.sh" "wise-$alpha" "$out"
done
