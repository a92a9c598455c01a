#!/usr/bin/env bash
# Server throughput at 1 and 16 concurrent clients, through the real gRPC path, with `longqa bench`.
# A random-weight model with small-but-real dims (d=256, 4 layers SSCS, l=256, m=224); documents of
# 300 and 2,000 words (the random model's tokenizer makes ~4.7 tokens a word). Default batching
# flags (max 16384 tokens a batch, 10 ms delay): large documents cannot share a batch.
# Usage: bench/server_bench.sh [BUILD_DIR] [SECONDS]   (prints a report on stdout)
# Env: CLIENTS ("1 16"), WORDS ("300 2000"), BATCHING ("on"; "on off" adds runs of a server whose
# batches hold one request: --max_batch_tokens=1 --max_batch_delay_ms=0).
set -euo pipefail
build="${1:-build}"
seconds="${2:-20}"
work="$(mktemp -d)"
server_pid=
trap 'kill "$server_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
"$build/tools/longqa-random-model" --out="$work/model" --hidden_size=256 --num_heads=4 \
  --intermediate_size=1024 --layers=SSCS --window_tokens=256 --stride_tokens=224 --clusters=16 \
  --vocab_size=2000 >/dev/null
source "$(dirname "$0")/../tools/start_server.sh"
serve() {  # flags...: the random model, with them
  start_server "$build" "$work/server.log" --model_dir="$work/model" \
    --metrics_listen=127.0.0.1:0 "$@"
}
# All clients share one address, which the per-caller queue limit (2^18 tokens) would cut at 64
# clients of 8k-token documents: the bench lifts it to the whole queue's.
caller_limit=--max_caller_queue_tokens=$((1 << 20))
echo "model: random weights, d=256, 4 layers (SSCS), l=256, m=224; $(nproc) CPUs; ${seconds}s per run"
for batching in ${BATCHING:-on}; do
  if [ "$batching" = on ]; then
    serve --max_batch_delay_ms=10 $caller_limit
  else
    serve --max_batch_tokens=1 --max_batch_delay_ms=0 $caller_limit
  fi
  for words in ${WORDS:-300 2000}; do
    for clients in ${CLIENTS:-1 16}; do
      echo
      echo "== documents of $words words, $clients concurrent client(s), batching $batching"
      "$build/client/longqa" bench --target="127.0.0.1:$port" --concurrency="$clients" \
        --duration_s="$seconds" --doc_words="$words"
    done
  done
  kill -TERM "$server_pid"
  wait "$server_pid"
done
