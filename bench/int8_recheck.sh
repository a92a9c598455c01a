#!/usr/bin/env bash
# Checked int8 (--int8_recheck_margin): for each margin, the model served in int8 with close calls
# computed again in fp32, scored by `longqa eval` on a gold split and compared with fp32's answers
# (bench/precision_agreement.py): how many requests were rechecked (the server's
# longqa_int8_rechecked_requests_total) and the eval's wall time. Margin 0 is plain int8.
# Usage: bench/int8_recheck.sh GOLD.jsonl FP32_PREDICTIONS.json OUT_DIR MARGIN...
#   (env BUILD (build), MODEL (models/demo), THREADS (2); FP32_PREDICTIONS from
#   `tools/eval_demo.sh` or bench/precision_answers.sh with --precision=fp32)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
MODEL="${MODEL:-$ROOT/models/demo}"
source "$ROOT/tools/start_server.sh"
gold="$1" reference="$2" out="$3"
shift 3
mkdir -p "$out"
printf '%-7s %10s %8s %s\n' margin rechecked seconds "agreement with fp32" | tee "$out/summary.txt"
for margin in "$@"; do
  log="$out/margin-$margin.server.log"
  start_server "$BUILD" "$log" --model_dir="$MODEL" --metrics_listen=127.0.0.1:0 \
    --threads="${THREADS:-2}" --max_batch_tokens=32768 --precision=int8 \
    --int8_recheck_margin="$margin"
  start=$(date +%s.%N)
  "$BUILD/client/longqa" eval --target="127.0.0.1:$port" --gold="$gold" --group_by=kind \
    --concurrency=2 --no_progress --output="$out/margin-$margin.predictions.json" \
    > "$out/margin-$margin.txt"
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
  rechecked=$(curl -s "http://127.0.0.1:$metrics_port/metrics" |
    sed -n 's/^longqa_int8_rechecked_requests_total \([0-9.e+]*\)$/\1/p')
  kill "$server_pid"; wait "$server_pid" || true
  agreement=$("$ROOT/.venv/bin/python" "$ROOT/bench/precision_agreement.py" "$reference" \
    "$out/margin-$margin.predictions.json")
  printf '%-7s %10.0f %8.1f %s\n' "$margin" "$rechecked" "$seconds" "$agreement" |
    tee -a "$out/summary.txt"
done
