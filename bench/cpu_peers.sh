#!/usr/bin/env bash
# longqa's encoder next to ONNX Runtime on the same windows, in one run (issue 22: figures are
# ratios measured together on a noisy machine). longqa: longqa-encoder-bench's sliding-window and
# Cluster-Former rows in fp32, int8 and bf16, and sliding-window on the layers' training path (the
# before); ONNX Runtime: the same BERT-base dims on the same 276-token windows, fp32 after its
# transformer optimizer and dynamic int8 (bench/peers/ort_bench.py). ONNX Runtime needs numpy 2,
# Debian's torch numpy 1.x: the graph is exported from the test venv, run from .venv-peers (made
# here, from PyPI).
# Usage: bench/cpu_peers.sh [BUILD] [TOKENS]   (default build, 8192; env THREADS, LONGQA_ARGS)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
TOKENS="${2:-8192}"  # one length, or MIN,MAX (doubling)
MIN="${TOKENS%,*}"
MAX="${TOKENS#*,}"
LENGTHS="$MIN"
for ((t = MIN * 2; t <= MAX; t *= 2)); do LENGTHS+=",$t"; done
THREADS="${THREADS:-2}"
PEERS="$ROOT/.venv-peers"
CACHE="$BUILD/peers"
mkdir -p "$CACHE"
if [[ ! -x "$PEERS/bin/python" ]]; then
  python3 -m venv "$PEERS"
  "$PEERS/bin/pip" install -q onnxruntime==1.31.1 onnx==1.23.2 "numpy>=2" packaging sympy
fi
[[ -s "$CACHE/bert.onnx" ]] || "$ROOT/.venv/bin/python" "$ROOT/bench/peers/export_bert.py" \
  "$CACHE/bert.onnx" 2> "$CACHE/export.log"
echo "== longqa"
"$BUILD/bench/longqa-encoder-bench" --threads="$THREADS" --min_tokens="$MIN" \
  --max_tokens="$MAX" --models=sliding,cluster,unfused ${LONGQA_ARGS:-}
"$BUILD/bench/longqa-encoder-bench" --threads="$THREADS" --min_tokens="$MIN" \
  --max_tokens="$MAX" --models=sliding,cluster --precision=int8 ${LONGQA_ARGS:-} | tail -n +4
"$BUILD/bench/longqa-encoder-bench" --threads="$THREADS" --min_tokens="$MIN" \
  --max_tokens="$MAX" --models=sliding,cluster --precision=bf16 ${LONGQA_ARGS:-} | tail -n +2
echo "== peers (same windows)"
"$PEERS/bin/python" "$ROOT/bench/peers/ort_bench.py" "$CACHE/bert.onnx" --tokens "$LENGTHS" \
  --threads "$THREADS"
