#!/usr/bin/env bash
# Issue 22's performance page in one command: every figure of docs/perf/README.md's tables, as a
# table on stdout, CSV files and PNG plots in OUT. Parts (env PARTS, all by default):
#   encoders  longqa-encoder-bench: sliding-window, Cluster-Former and ETC (d 768, 12 layers,
#             random weights) from 1k to MAX_TOKENS, in fp32, int8 and (where the CPU has bf16
#             instructions) bf16; FLOP/s over the GEMM of the same run
#   peers     on the same documents: ONNX Runtime fp32 and int8 on longqa's windows
#             (bench/peers/ort_bench.py), Hugging Face Longformer, BigBird and BERT with full
#             attention (bench/peers/hf_bench.py; BERT up to FULL_MAX tokens)
#   qa        longqa-server against the transformers QA pipeline, same converted MiniLM, same
#             windows, 8k-token documents (bench/peers/qa_pipeline_bench.py)
#   server    requests/s, p50/p99 at 1, 4, 16, 64 clients, batching on and off, documents of 300
#             and 1,750 words (~8k tokens) (bench/server_bench.sh)
#   memory    peak resident memory a request adds against document length, 4k to 32k tokens,
#             models/demo (sliding-window, MiniLM dims) and models/scratch_etc (ETC)
#             (longqa-memory-bench --tokens, a fresh process a size)
# Raw outputs go to OUT/logs; bench/perf_tables.py makes the tables and plots from them. Run it
# alone on the machine: the figures are ratios within one run. About 40 minutes on 2 cores.
# Usage: bench/perf_report.sh [BUILD] [OUT]   (default build, docs/perf)
# Env: THREADS (2), MAX_TOKENS (32768), FULL_MAX (8192), SERVER_SECONDS (10), PARTS
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" && pwd)"
OUT="${2:-$ROOT/docs/perf}"
THREADS="${THREADS:-2}"
MAX_TOKENS="${MAX_TOKENS:-32768}"
PARTS="${PARTS:-encoders peers qa server memory}"
LOGS="$OUT/logs"
mkdir -p "$LOGS"
LENGTHS=""
for ((t = 1024; t <= MAX_TOKENS; t *= 2)); do LENGTHS+="${LENGTHS:+,}$t"; done
PEERS="$ROOT/.venv-peers"  # ONNX Runtime and matplotlib need numpy 2; .venv's torch needs 1.x
if [[ ! -x "$PEERS/bin/python" ]]; then
  python3 -m venv "$PEERS"
fi
"$PEERS/bin/pip" install -q onnxruntime==1.31.1 onnx==1.23.2 "numpy>=2" packaging sympy \
  matplotlib==3.11.2
has() { [[ " $PARTS " == *" $1 "* ]]; }
{
  echo "date: $(date -u +%F)  $(nproc) CPUs  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
  echo "flags: $(grep -m1 -o 'avx512f\|avx512_bf16\|amx_bf16\|avx512_vnni\|avx2' /proc/cpuinfo \
    | sort -u | tr '\n' ' ')OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}"
  echo "versions: $("$ROOT/.venv/bin/python" -c 'import torch, transformers; print("torch", \
    torch.__version__, "transformers", transformers.__version__)') onnxruntime \
$("$PEERS/bin/python" -c 'import onnxruntime; print(onnxruntime.__version__)')"
} > "$LOGS/machine.txt"
cat "$LOGS/machine.txt"

precisions="fp32 int8"  # bf16 where the CPU has bf16 instructions (without, oneDNN emulates it)
if grep -q 'avx512_bf16\|amx_bf16' /proc/cpuinfo; then
  precisions+=" bf16"
  # The LibTorch kernels longqa picks there (model/compute_info.h), for the Python peers too.
  export ATEN_CPU_CAPABILITY="${ATEN_CPU_CAPABILITY:-avx512}"
fi
if has encoders; then
  : > "$LOGS/encoders.txt"
  for p in $precisions; do
    echo "== encoders $p" | tee -a "$LOGS/encoders.txt"
    "$BUILD/bench/longqa-encoder-bench" --threads="$THREADS" --min_tokens=1024 \
      --max_tokens="$MAX_TOKENS" --models=sliding,cluster,etc --precision="$p" \
      | tee -a "$LOGS/encoders.txt"
  done
fi
if has peers; then
  CACHE="$BUILD/peers"
  mkdir -p "$CACHE"
  [[ -s "$CACHE/bert.onnx" ]] || "$ROOT/.venv/bin/python" "$ROOT/bench/peers/export_bert.py" \
    "$CACHE/bert.onnx" 2> "$CACHE/export.log"
  { "$PEERS/bin/python" "$ROOT/bench/peers/ort_bench.py" "$CACHE/bert.onnx" --tokens "$LENGTHS" \
      --threads "$THREADS" 2>/dev/null
    "$ROOT/.venv/bin/python" "$ROOT/bench/peers/hf_bench.py" --tokens "$LENGTHS" \
      --threads "$THREADS" --full_max "${FULL_MAX:-8192}" 2>/dev/null
  } | tee "$LOGS/peers.txt"
fi
if has qa; then
  "$ROOT/.venv/bin/python" "$ROOT/bench/peers/qa_pipeline_bench.py" --build "$BUILD" \
    --threads "$THREADS" --precisions "$(echo "$precisions" | tr ' ' ,)" 2>/dev/null \
    | tee "$LOGS/qa.txt"
fi
if has server; then
  CLIENTS="1 4 16 64" WORDS="300 1750" BATCHING="on off" \
    "$ROOT/bench/server_bench.sh" "$BUILD" "${SERVER_SECONDS:-10}" | tee "$LOGS/server.txt"
fi
if has memory; then
  : > "$LOGS/memory.txt"
  # The issue's range, 4k to 32k tokens, whatever each model's tokenizer makes of the bytes.
  for model in "$ROOT/models/demo" "$ROOT/models/scratch_etc"; do
    for tokens in 4096 8192 16384 32768; do
      "$BUILD/bench/longqa-memory-bench" --model_dir="$model" --threads="$THREADS" \
        --text="$ROOT/models/scratch_etc/sample.txt" --tokens="$tokens" 2>/dev/null \
        | sed "s|^$ROOT/||" | tee -a "$LOGS/memory.txt"  # the log names models/..., not this path
    done
  done
fi
"$PEERS/bin/python" "$ROOT/bench/perf_tables.py" "$LOGS" "$OUT"
