#!/usr/bin/env bash
# Scores trained model folders on a gold split through the real path: a longqa-server per model
# and `longqa eval --group_by kind` (NQ long/short P/R/F1 per question kind).
# Usage: tools/eval_demo.sh GOLD.jsonl OUT_DIR MODEL_DIR...   (env BUILD, THREADS, EVAL_FLAGS:
# more `longqa eval` flags, e.g. --calibrate_null, and SERVER_FLAGS: more server flags, e.g.
# --precision=bf16; without it the server serves at its default, auto: a folder's default_precision
# where the CPU runs it natively, else fp32). Writes OUT_DIR/NAME.txt (the report, once the eval has
# finished), NAME.predictions.json and NAME.server.log for each model folder NAME.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
source "$ROOT/tools/start_server.sh"
gold="$1"; out="$2"; shift 2
mkdir -p "$out"
# A failed eval (exit 4: some requests failed, e.g. past their deadline on a busy machine) ends
# this script under set -e: the server it started goes with it, not left serving.
trap '[[ -n "${server_pid:-}" ]] && kill "$server_pid" 2>/dev/null' EXIT
for model in "$@"; do
  name="$(basename "$model")"
  log="$out/$name.server.log"
  start_server "$BUILD" "$log" --model_dir="$model" --metrics_listen= --threads="${THREADS:-1}" \
    --max_batch_tokens=32768 ${SERVER_FLAGS:-}
  # The report is written as it goes under a .partial name and takes its own name only when the
  # eval finished, so OUT_DIR/NAME.txt is always a whole report: scripts that skip a scored model
  # (`[[ -s OUT_DIR/NAME.txt ]]`) do not take a stopped eval's header for one.
  report="$out/$name.txt"
  echo "== $name on $(basename "$gold")" | tee "$report.partial"
  "$BUILD/client/longqa" eval --target="127.0.0.1:$port" --gold="$gold" --group_by=kind \
    --concurrency=2 --no_progress --output="$out/$name.predictions.json" ${EVAL_FLAGS:-} |
    tee -a "$report.partial"
  mv "$report.partial" "$report"
  kill "$server_pid"; wait "$server_pid" || true
  server_pid=""
done
