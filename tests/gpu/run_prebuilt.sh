#!/usr/bin/env bash
# Runs the GPU checks from the tarball tests/gpu/stage_prebuilt.sh made, on a machine with an
# NVIDIA GPU and pip's CUDA torch (whose LibTorch and CUDA libraries the binaries load):
#   1. every kernel op on CUDA against the CPU reference (kernels_test's CUDA cases),
#   2. the whole model on CUDA against CPU (gpu_engine_test),
#   3. the encoder benchmark on the GPU, fp32 and bf16, 1k to 32k tokens (and on the machine's
#      CPU at 8k tokens, for a ratio on one machine),
#   4. the server on --device cuda answering a ~150 KB document of ordinary paragraphs (random
#      MiniLM-sized Cluster-Former and ETC models: 6 layers, d 384), the same request on the CPU
#      beside it, and the GPU memory it used.
# Each step runs on whatever the last one did; its output and exit status land in OUT_DIR.
# Usage: tests/gpu/run_prebuilt.sh longqa-gpu.tar.xz OUT_DIR   (env PYTHON: the torch python)
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$(mkdir -p "$2" && cd "$2" && pwd)"
rm -f "$out/summary.txt"
# shellcheck source=tests/gpu/prebuilt_env.sh
source "$root/tests/gpu/prebuilt_env.sh" "$1"  # $pkg, $libs, run()
step() {  # name, timeout, program args...: logs to OUT_DIR/name.txt and prints its status
  local name="$1" limit="$2"
  shift 2
  local t0=$SECONDS
  timeout "$limit" env LD_LIBRARY_PATH="$libs" "$@" > "$out/$name.txt" 2>&1
  local rc=$?
  echo "$name: exit $rc in $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
  if [ "$rc" -gt 128 ] && [ "$rc" != 137 ] && command -v cuda-gdb > /dev/null; then
    # A crash: the same run under cuda-gdb for a backtrace (it also stops in GPU code).
    timeout "$limit" cuda-gdb -batch -ex "set environment LD_LIBRARY_PATH=$libs" -ex run \
      -ex "thread apply all bt 30" --args "$@" > "$out/$name.backtrace.txt" 2>&1
  fi
}

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  echo "torch here: $("$py" -c 'import torch; print(torch.__version__, torch.version.git_version)')"
  echo "built against: $(cat "$pkg/torch-built-against.txt"), longqa $(cat "$pkg/commit.txt")"
  nproc
  for p in "$pkg"/bin/*; do run ldd "$p" | grep 'not found' | sed "s|^|${p##*/}: |"; done
} > "$out/environment.txt" 2>&1
cat "$out/environment.txt"

step kernels_test 300 "$pkg/bin/kernels_test" --gtest_brief=1
step gpu_engine_test 300 "$pkg/bin/gpu_engine_test" --gtest_brief=1
step encoder_bench_fp32 300 "$pkg/bin/longqa-encoder-bench" --device=cuda --max_tokens=32768
step encoder_bench_cpu 300 "$pkg/bin/longqa-encoder-bench" --device=cpu --min_tokens=8192 \
  --max_tokens=8192
step encoder_bench_bf16 300 "$pkg/bin/longqa-encoder-bench" --device=cuda --max_tokens=32768 \
  --precision=bf16

# 4. The server end to end. The document: the repository's docs, paragraphs as written, ~150 KB.
doc="$pkg/document.txt"
cat "$root"/docs/*.md "$root"/README.md | head -c 150000 > "$doc"
port=15051
serve_and_ask() {  # name, device, model_dir, attempts
  local name="$1" device="$2" model="$3" attempts="$4"
  port=$((port + 1))  # a port of its own: gRPC binds with SO_REUSEPORT
  env LD_LIBRARY_PATH="$libs" "$pkg/bin/longqa-server" --model_dir="$model" --device="$device" \
    --listen=127.0.0.1:$port --metrics_listen=127.0.0.1:$((port + 1000)) \
    --max_document_tokens=262144 > "$out/$name.server.txt" 2>&1 &
  local server=$!
  for _ in $(seq 120); do
    run "$pkg/bin/longqa" health --target=127.0.0.1:$port > /dev/null 2>&1 && break
    sleep 0.5
  done
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 \
    > "$out/$name.gpu_mb.txt" 2>&1 &
  local sampler=$!
  for attempt in $(seq "$attempts"); do  # on a GPU the first answer includes the warm-up
    step "$name.ask$attempt" 120 "$pkg/bin/longqa" ask --target=127.0.0.1:$port --timeout_s=110 \
      --question="How does the server batch requests?" --file="$doc" --json
  done
  kill "$sampler" "$server" 2> /dev/null
  wait "$server" 2> /dev/null
  echo "$name: peak GPU memory used $(sort -n "$out/$name.gpu_mb.txt" | tail -1) MiB" |
    tee -a "$out/summary.txt"
}
for arch in cluster_former etc; do
  if [ "$arch" = etc ]; then layers=EEEEEE; else layers=SSCSSC; fi
  step "random_model_$arch" 120 "$pkg/bin/longqa-random-model" --out="$pkg/$arch" \
    --architecture=$arch --layers=$layers --hidden_size=384 --num_heads=12 \
    --intermediate_size=1536 --window_tokens=256 --stride_tokens=224 --clusters=16 \
    --etc_radius=84 --vocab_size=1000 --corpus="$doc"
  for device in ${DEVICES:-cuda cpu}; do
    if [ "$device" = cuda ]; then attempts=2; else attempts=1; fi
    serve_and_ask "$arch.$device" "$device" "$pkg/$arch" "$attempts"
  done
done
cat "$out/summary.txt"
