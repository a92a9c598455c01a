#!/usr/bin/env bash
# Session 60: the kept Cluster-Former (models/checkpoints/cluster_former_minilm) on the real-English
# sets models/demo is scored on, beside models/demo in the same run (the man-page sets follow
# this machine's /usr/share/man, so figures of other sessions' machines do not compare). The
# data as round 6 made it (tools/train_minilm_tables.sh with round 6's table settings,
# DATA_ONLY=1); the Cluster-Former's threshold calibrated on calib5 as round 6's was
# (tools/ship_realtext_round.sh); models/demo served as shipped. Reports land in W/eval/<set> and
# the per-kind tables beside this script as realtext-<model>-<set>.kinds.md.
# Usage: realtext.sh   (env W: the work folder, default build/realtext-cf; MODEL: the checkpoint
# scored, default the kept one; NAME: its name in the reports, default cf-kept (session 60 scored
# bal2, then kept, as cf-bal2); THREADS (2); DEMO=0: models/demo not served (its reports beside
# this script are from an earlier run))
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../../.."
W="${W:-build/realtext-cf}" name="${NAME:-cf-kept}"
model="${MODEL:-models/checkpoints/cluster_former_minilm}"
PY=.venv/bin/python
export THREADS="${THREADS:-2}"
sets=(prose/test real tables/dev man/test man-mdtest/test long/test prose-long/test)

# shellcheck source=bench/results/minilm_eval/realtext/cf-drill-first/round6.sh
source "$HERE/round6.sh"
env "${ROUND6[@]}" DATA_ONLY=1 tools/train_minilm_tables.sh models/demo "$W"
tools/ship_realtext_round.sh "$model" "$W/data/calib5.jsonl" \
  "$W/eval" "$W/$name" models/demo "$W/data" "${sets[@]}"
models=("$name")
[[ ${DEMO:-1} == 0 ]] || models+=(demo)
for set in "${sets[@]}"; do
  out="$W/eval/${set//\//-}"
  if [[ ${DEMO:-1} != 0 ]]; then
    [[ -s $out/demo.txt ]] || tools/eval_demo.sh "$W/data/$set.jsonl" "$out" models/demo
    $PY tools/demo_report.py "$W/data/$set.jsonl" "demo=$out/demo.predictions.json" \
      > "$out/demo.kinds.md"
  fi
  for m in "${models[@]}"; do
    cp "$out/$m.kinds.md" "$HERE/realtext-$m-${set//\//-}.kinds.md"
  done
done
cp "$W/eval/calib/$(basename "$model").txt" "$HERE/realtext-$name-calib5.txt"
