#!/usr/bin/env bash
# Session 63: weight-space ensembles (interpolate.py, as wise.sh) of the kept Cluster-Former
# (replay: the best on the generated 8k-32k dev documents) and mixed120 (replay + 900 steps of
# mixed-round.sh with 120 long documents: the best on real English and on one-hop test, but its
# unanswerable questions answered at its 8k-32k threshold). Both share replay's trajectory, so
# the average is a point on one fine-tuning path, not two unrelated models. Centroids fitted again
# by longqa-centroids on 15 of the round's 8k-32k training documents; then score_model.sh
# (FORCED answers too) and realtext.sh (real English, models/demo's reports already beside it).
# Usage: soup.sh ALPHA...   (ALPHA: mixed120's share, 1.0 = mixed120 with its centroids fitted
# again; env W (build/mixed120, mixed-round.sh's folder with LONG=120), RT (realtext.sh's W,
# default build/rt), START, END, REALTEXT=0: the generated split only)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../../.."
export W="${W:-build/mixed120}"
START="${START:-models/checkpoints/cluster_former_minilm}" END="${END:-$W/round}"
corpus=$W/centroid-corpus.jsonl
[[ -s $corpus ]] || head -n 15 "$W/data/long120-seed81/train.jsonl" > "$corpus"
for alpha in "$@"; do
  out=$W/soup-$alpha
  if [[ ! -s $out/model.safetensors ]]; then
    .venv/bin/python "$HERE/interpolate.py" "$START" "$END" "$alpha" "$out.tmp"
    build/tools/longqa-centroids --model_dir="$out.tmp" --corpus="$corpus" --threads=2
    rm -rf "$out" && mv "$out.tmp" "$out"
  fi
  bash "$HERE/score_model.sh" "soup-$alpha" "$out"
  [[ ${REALTEXT:-1} == 0 ]] ||
    W="${RT:-build/rt}" MODEL="$out" NAME="soup-$alpha" DEMO=0 bash "$HERE/realtext.sh"
done
