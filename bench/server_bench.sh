#!/usr/bin/env bash
# Server throughput at 1 and 16 concurrent clients, through the real gRPC path, with `longqa bench`.
# A random-weight model with small-but-real dims (d=256, 4 layers SSCS, l=256, m=224); documents of
# 300 and 2,000 words (the random model's tokenizer makes ~4.7 tokens a word). Default batching
# flags (max 16384 tokens a batch, 10 ms delay): large documents cannot share a batch.
# Usage: bench/server_bench.sh [BUILD_DIR] [SECONDS]   (prints a report on stdout)
set -euo pipefail
build="${1:-build}"
seconds="${2:-20}"
work="$(mktemp -d)"
trap 'kill "$server_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
"$build/tools/longqa-random-model" --out="$work/model" --hidden_size=256 --num_heads=4 \
  --intermediate_size=1024 --layers=SSCS --window_tokens=256 --stride_tokens=224 --clusters=16 \
  --vocab_size=2000 >/dev/null
"$build/server/longqa-server" --model_dir="$work/model" --listen=127.0.0.1:0 \
  --metrics_listen=127.0.0.1:0 --max_batch_delay_ms=10 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 1 600); do
  port=$(sed -n 's/.*on port \([0-9]*\), metrics.*/\1/p' "$work/server.log")
  [ -n "$port" ] && break
  sleep 0.1
done
echo "model: random weights, d=256, 4 layers (SSCS), l=256, m=224; $(nproc) CPUs; ${seconds}s per run"
for words in 300 2000; do
  for clients in 1 16; do
    echo
    echo "== documents of $words words, $clients concurrent client(s)"
    "$build/client/longqa" bench --target="127.0.0.1:$port" --concurrency="$clients" \
      --duration_s="$seconds" --doc_words="$words"
  done
done
kill -TERM "$server_pid"
wait "$server_pid"
