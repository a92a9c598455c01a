#!/usr/bin/env bash
# Keeps a stage of rebuild.sh's chain past the checkout: build/ does not survive a new one, and
# the chains of sessions 50, 54 and 57 were lost with it. Ships W/<folder> in bf16 (weights,
# centroids, config, tokenizer; no optimizer state: half the bytes of fp32, 45 MB) into
# models/checkpoints/cluster_former_minilm with a `stage` file naming it; rebuild.sh then starts
# from there instead of training the stages up to it again. The next stage starts from weights
# rounded to bf16 and a fresh optimizer: not the same run as the chain in one go.
# Usage: persist.sh STAGE   (1 drill, 3 lds300, 4 hls, 5 the real-English round, 6 the matched
# wide round; env W, default build/cf-r10; NULL_THRESHOLD: config.json's, e.g. the stage's calib5
# threshold as realtext.sh chose it; NULL_BAND: MIN_TOKENS:T, a threshold for documents of
# MIN_TOKENS tokens or more (config.json null_threshold_bands); session 68 kept stage 6 with
# +1.85283 and no band: the band it tried, 8192:+9.89004, nulled real long documents, see
# docs/demo-model.md). Not 2: stage 3 resumes stage 2's run, which needs the optimizer state a
# kept stage lacks.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../../.."
W="${W:-build/cf-r10}"
# shellcheck source=bench/results/minilm_eval/realtext/cf-drill-first/stages.sh
source "$HERE/stages.sh"
stage="$1" folder="${STAGE_FOLDERS[$1]}"
if [[ $stage == 2 ]]; then
  echo "persist.sh: stage 2 (lds) is continued by resuming its run; keep stage 1, 3 or 4" >&2
  exit 2
fi
P=models/checkpoints/cluster_former_minilm
python3 -c 'import json, sys; print("step", json.load(open(sys.argv[1]))["step"])' \
  "$W/$folder/trainer_state.json"
rm -rf "$P"
.venv/bin/python tools/ship_model.py "$W/$folder" "$P" --dtype bf16 --answer_score=type+long \
  ${NULL_THRESHOLD:+--null_threshold="$NULL_THRESHOLD"} \
  ${NULL_BAND:+--null_threshold_band="$NULL_BAND"}
echo "$stage $folder" > "$P/stage"
du -sh "$P"
