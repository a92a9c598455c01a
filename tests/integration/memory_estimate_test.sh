#!/usr/bin/env bash
# The admission estimate (Engine::ActivationBytes) against the peak resident memory a request
# really adds, measured by longqa-memory-bench in a fresh process: within [0.7, 2.0] of it on an
# ETC and a Cluster-Former model at two document sizes. Outside that band the budgets would
# refuse ordinary documents (estimate too high) or let memory run past them (too low). The
# clustering attention layers (N, K, I) are checked on one size (measured 2026-11-24: 30,000
# bytes 1.70, 150,000 bytes 1.49).
# Usage: memory_estimate_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src="$1"; build="$2"
bench="$build/bench/longqa-memory-bench"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
# A Cluster-Former model of MiniLM's shape with random weights (tools/random_model's CLI).
"$build/tools/longqa-random-model" --out="$work/cf" --layers=SSCSSC --hidden_size=384 \
  --num_heads=12 --intermediate_size=1536 --window_tokens=256 --stride_tokens=224 >/dev/null
# The same shape with neural clustering, clustered and improved clustered attention layers.
"$build/tools/longqa-random-model" --out="$work/nki" --layers=SNSKSI --hidden_size=384 \
  --num_heads=12 --intermediate_size=1536 --window_tokens=256 --stride_tokens=224 \
  --clusters=64 >/dev/null
fail=0
for model in "$src/models/scratch_etc" "$work/cf" "$work/nki"; do
  sizes="30000 150000"
  [ "$model" = "$work/nki" ] && sizes="30000"
  for bytes in $sizes; do
    line=$("$bench" --model_dir="$model" --text="$src/models/scratch_etc/sample.txt" --bytes="$bytes" \
      --threads=2 2>/dev/null)
    echo "$line"
    ratio=${line##* ratio }
    awk -v r="$ratio" 'BEGIN { exit !(r >= 0.7 && r <= 2.0) }' || { echo "  ratio out of [0.7, 2.0]"; fail=1; }
  done
done
# --tokens: the file's paragraphs repeated until the document has that many tokens (the bench's
# sizes in tokens, bench/perf_report.sh's memory part): at least 4,096, at most a paragraph more.
line=$("$bench" --model_dir="$src/models/scratch_etc" --text="$src/models/scratch_etc/sample.txt" \
  --tokens=4096 --threads=2 2>/dev/null)
echo "$line"
tokens=$(awk '{ for (i = 1; i < NF; i++) if ($i == "tokens") print $(i + 1) }' <<< "$line")
[ -n "$tokens" ] && [ "$tokens" -ge 4096 ] && [ "$tokens" -le 4300 ] ||
  { echo "  --tokens=4096 made a document of ${tokens:-no} tokens"; fail=1; }
exit "$fail"
