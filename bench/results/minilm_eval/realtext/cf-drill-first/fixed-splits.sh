#!/usr/bin/env bash
# Session 64: the long dev / test splits made again by tools/make_dataset.py after its fix (a
# distractor "Stories about a judge named X" stated X's occupation; now, where a question asks an
# occupation, such stories about its subject no longer do: 15 test and 10 dev examples change, all
# others are byte for byte as before), then the kept Cluster-Former, the mixed120-mix28 repeat and
# models/demo scored on them as score_model.sh and eval_demo.sh score the old splits.
# Usage: fixed-splits.sh   (env W: the work folder, default build/fixed64b)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../../.."
export W="${W:-build/fixed64b}"
[[ -s $W/data/long/test.jsonl ]] || .venv/bin/python tools/make_dataset.py --out "$W/data/long" \
  --seed 21 --train 0 --dev 200 --test 200 --min_tokens 8000 --max_tokens 32000
head -100 "$W/data/long/dev.jsonl" > "$W/long100.jsonl"
"$HERE/score_model.sh" fixed-replay models/checkpoints/cluster_former_minilm
"$HERE/score_model.sh" fixed-mixed120-mix28 build/mixed120b/round
[[ -s $W/eval/demo-fixed/demo.txt ]] ||
  THREADS=2 tools/eval_demo.sh "$W/data/long/test.jsonl" "$W/eval/demo-fixed" models/demo
cp "$W/eval/demo-fixed/demo.txt" "$HERE/demo-fixed-test.txt"
