#!/usr/bin/env bash
# Trains several variants of the English model side by side on one lent GPU machine, each lifted
# there from all-MiniLM-L6-v2 by tools/train_minilm.sh's import (INIT_ONLY=1), then trained by
# tests/gpu/train_prebuilt.sh with its own stages. Why: one trainer is far from filling an H200
# (2,048-token batches of a d-384 model) or its 16 cores, and a lease is short; and one carried
# copy of the encoder (fp16, 41 MB compressed) replaces an initial folder per variant, which
# would not fit the tool's 64 MiB together.
# Usage: tests/gpu/train_lifts_prebuilt.sh TARBALL MINILM_DIR OUT_DIR SPEC...
#   TARBALL: tests/gpu/stage_prebuilt.sh's; MINILM_DIR: the Hugging Face folder to lift (fp16
#   weights are fine: import_hf.py reads them into fp32); SPEC: VARIANT or
#   VARIANT:NAME=VALUE,NAME=VALUE (train_prebuilt.sh's environment for that variant, e.g.
#   etc:YESNO=1,TWOHOP=1). Env as train_prebuilt.sh's, for all variants (THREADS defaults to the
#   cores shared out); ETC_FLAGS, CLUSTERS: the lift's (tools/train_minilm.sh).
# Out: OUT_DIR/runs.tar.part-* (`cat` them, then tar x: each variant's train_prebuilt.sh output
# folder and its console log), OUT_DIR/summary.txt (every variant's summary). The device tool
# returns about 64 MiB in all (session 26: 4 of 6 parts of 15 MiB came back), which holds one
# variant's folder (44 MB in fp16): the stream puts every log, summary and score first, then the
# folders in the order of SPEC, so the first variant's folder and everyone's figures come back.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tarball="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
minilm="$(cd "$2" && pwd)"
out="$(mkdir -p "$3" && cd "$3" && pwd)"
shift 3
specs=("$@")
runs="$(mktemp -d)"
trap 'rm -rf "$runs"' EXIT

variants=()
for spec in "${specs[@]}"; do variants+=("${spec%%:*}"); done
PYTHON="${PYTHON:-python3}" MINILM="$minilm" VARIANTS="${variants[*]}" INIT_ONLY=1 \
  "$root/tools/train_minilm.sh" "$runs/lift" || { echo "the lift failed" >&2; exit 1; }

cores="$(nproc)"
export THREADS="${THREADS:-$((cores / ${#specs[@]} > 0 ? cores / ${#specs[@]} : 1))}"
for spec in "${specs[@]}"; do
  v="${spec%%:*}"
  settings=()
  [[ "$spec" == *:* ]] && IFS=, read -r -a settings <<< "${spec#*:}"
  env "${settings[@]}" "$root/tests/gpu/train_prebuilt.sh" "$tarball" "$runs/lift/init-$v" "$v" \
    "$runs/$v" > "$runs/$v.out" 2>&1 &
done
wait

for v in "${variants[@]}"; do
  echo "== $v" >> "$out/summary.txt"
  cat "$runs/$v/summary.txt" >> "$out/summary.txt" 2>/dev/null
done
cat "$out/summary.txt"
{
  (cd "$runs" && find . -path ./lift -prune -o -type f ! -name '*.tar.part-*' -print)
  for v in "${variants[@]}"; do (cd "$runs" && find "./$v" -name '*.tar.part-*' | sort); done
} > "$runs/lift/order"  # lift/: not in the stream
tar -C "$runs" -cf - -T "$runs/lift/order" | split -b 15M - "$out/runs.tar.part-"
ls -l "$out"
