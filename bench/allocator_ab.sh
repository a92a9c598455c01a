#!/usr/bin/env bash
# A/B of malloc implementations under longqa-server: the same document
# (models/scratch_etc/sample.txt repeated to 60 KB, about 24k tokens) answered by
# models/scratch_etc (the ETC demo model the recorded figures used) with one thread, the server
# started afresh with each allocator preloaded, rounds interleaved so that load on the machine hits
# alike. Prints wall time and peak resident memory (VmHWM). Run from the repository root after a
# build; longqa-server links tcmalloc itself when built with it, so "glibc" is only glibc on a
# binary built without it (LONGQA_TCMALLOC unset): see bench/results/allocator_cpu_2core.txt.
# Usage: bench/allocator_ab.sh [ROUNDS]
set -euo pipefail
BUILD="${BUILD:-build}"
doc="$(mktemp)"
python3 -c "
t = open('models/scratch_etc/sample.txt').read()
out = ''
while len(out) < 60000: out += t + '\n\n'
open('$doc', 'w').write(out[:60000])"
run() {  # name, then env assignments
  local name="$1"; shift
  env "$@" "$BUILD/server/longqa-server" --model_dir=models/scratch_etc --listen=127.0.0.1:50999 \
    --metrics_listen= --threads=1 2>/dev/null &
  local pid=$!
  for _ in $(seq 100); do
    "$BUILD/client/longqa" health --target=127.0.0.1:50999 >/dev/null 2>&1 && break
    sleep 0.1
  done
  local start end
  start=$(date +%s.%N)
  "$BUILD/client/longqa" ask --target=127.0.0.1:50999 --file="$doc" --timeout_s=600 \
    --question="Where was the writer born?" --json >/dev/null
  end=$(date +%s.%N)
  echo "$name: $(echo "$end - $start" | bc) s, $(grep VmHWM "/proc/$pid/status" | tr -s ' \t' ' ')"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}
for _ in $(seq "${1:-2}"); do
  run as-built
  for lib in /lib/x86_64-linux-gnu/libjemalloc.so.2 /lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4; do
    [[ -e "$lib" ]] && run "$(basename "$lib" | sed 's/lib\([a-z]*\).*/\1/')" LD_PRELOAD="$lib"
  done
done
rm -f "$doc"
