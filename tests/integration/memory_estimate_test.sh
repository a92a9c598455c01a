#!/usr/bin/env bash
# The admission estimate (Engine::ActivationBytes) against the peak resident memory a request
# really adds, measured by longqa-memory-bench in a fresh process: within [0.7, 2.0] of it on an
# ETC and a Cluster-Former model at two document sizes. Outside that band the budgets would
# refuse ordinary documents (estimate too high) or let memory run past them (too low).
# Usage: memory_estimate_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src="$1"; build="$2"
bench="$build/bench/longqa-memory-bench"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
# A Cluster-Former model of MiniLM's shape with random weights (tools/random_model's CLI).
"$build/tools/longqa-random-model" --out="$work/cf" --layers=SSCSSC --hidden_size=384 \
  --num_heads=12 --intermediate_size=1536 --window_tokens=256 --stride_tokens=224 >/dev/null
fail=0
for model in "$src/models/scratch_etc" "$work/cf"; do
  for bytes in 30000 150000; do
    line=$("$bench" --model_dir="$model" --text="$src/models/scratch_etc/sample.txt" --bytes="$bytes" \
      --threads=2 2>/dev/null)
    echo "$line"
    ratio=${line##* ratio }
    awk -v r="$ratio" 'BEGIN { exit !(r >= 0.7 && r <= 2.0) }' || { echo "  ratio out of [0.7, 2.0]"; fail=1; }
  done
done
exit "$fail"
