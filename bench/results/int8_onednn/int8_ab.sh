#!/bin/bash
# Old (3153463) and new int8 alternating: the MiniLM server on part (c)'s four 8k-token documents,
# and the encoder bench (d 768, 12 layers) in int8 at 8k and 32k.
cd "$(dirname "$0")/../../.."
export ATEN_CPU_CAPABILITY=avx512
for pair in 1 2 3; do
  for v in old new; do
    echo "== pair $pair $v: MiniLM server int8 (tokens/s, 3 rounds)"
    bench/results/int8_onednn/harness/run.sh /tmp/ab/$v/longqa-server int8 3 | cut -c1-24
  done
done
for pair in 1 2; do
  for v in old new; do
    echo "== pair $pair $v: encoder bench int8"
    /tmp/ab/$v/longqa-encoder-bench --min_tokens=8192 --max_tokens=32768 --threads=2 --models=sliding,cluster,etc --precision=int8 2>/dev/null | grep -E "^(sliding|cluster|etc)" | grep -v 16384
  done
done
echo done
