#!/bin/bash
# Alternating rounds: ONNX Runtime fp32/int8 and longqa sliding-window fp32, 8k and 32k.
cd "$(dirname "$0")/../../.."
export ATEN_CPU_CAPABILITY=avx512
for round in 1 2 3; do
  echo "== round $round"
  .venv-peers/bin/python bench/peers/ort_bench.py build/peers/bert.onnx --tokens 8192,32768 --threads 2 2>/dev/null
  build/bench/longqa-encoder-bench --min_tokens=8192 --max_tokens=32768 --threads=2 --models=sliding,cluster 2>/dev/null | grep -E "^(sliding|cluster)"
done
