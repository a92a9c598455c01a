#!/usr/bin/env bash
# Session 54: a trained Cluster-Former checkpoint served as it would ship, as cf-from-round6/run.sh
# scores its long stage: the null threshold calibrated on the first 100 8k-32k dev documents, the
# 200 test documents served at it, then every answer forced on them (null_scores.py collect) and
# the margins per kind and phrasing (margins.py). Results land beside this script as NAME-*.
# Usage: score_model.sh NAME CHECKPOINT   (W: the work folder, default build/cf-r9; SERVED_ONLY=1:
# stop once the test split is served, no answers forced)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../../.."
W="${W:-build/cf-r9}"
name="$1" checkpoint="$2"
PY=.venv/bin/python
ev() { THREADS=2 EVAL_FLAGS="$1" tools/eval_demo.sh "$2" "$3" "$4"; }
# tools/eval_demo.sh names a report once its eval has finished; before session 57 it wrote the
# report as it went, and a stopped eval left its header alone.
scored() { grep -q '^examples ' "$1" 2>/dev/null; }
ship() {  # output folder, then ship_model.py flags
  local out="$1"; shift
  [[ -s $out/model.safetensors ]] || $PY tools/ship_model.py "$checkpoint" "$out" --dtype f32 \
    --answer_score=type+long "$@"
}
ship "$W/tl-$name"
scored "$W/eval/calib/tl-$name.txt" ||
  ev "--calibrate_null --timeout_s=900" "$W/long100.jsonl" "$W/eval/calib" "$W/tl-$name"
t=$(tools/calibrated_threshold.sh "$W/eval/calib/tl-$name.txt")
ship "$W/ship-$name" --null_threshold="$t"
scored "$W/eval/test/ship-$name.txt" ||
  ev "--timeout_s=900" "$W/data/long/test.jsonl" "$W/eval/test" "$W/ship-$name"
cp "$W/eval/calib/tl-$name.txt" "$HERE/$name-calib-long100.txt"
cp "$W/eval/test/ship-$name.txt" "$HERE/$name-test.txt"
[[ -z "${SERVED_ONLY:-}" ]] || exit 0
scores=$W/$name-test200-scores.json
if [[ ! -s $scores ]]; then
  # shellcheck source=bench/results/minilm_eval/realtext/cf-drill-first/forced_scores.sh
  source "$HERE/forced_scores.sh"
  forced_scores "$W/ship-$name" "$W/data/long/test.jsonl" "$scores" "$W/$name-scores.server.log"
fi
cp "$scores" "$HERE/$name-test200-scores.json"
python3 bench/results/minilm_eval/realtext/cf-from-round6/margins.py "$W/data/long/test.jsonl" \
  "$scores" "$t" | tee "$HERE/$name-test-margins.md"
