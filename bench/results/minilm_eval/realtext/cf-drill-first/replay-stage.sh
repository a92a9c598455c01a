#!/usr/bin/env bash
# Session 60: the chain's stage 5, a real-English round (round 6's mix and settings,
# tools/train_minilm_tables.sh TRAIN_ONLY=1) from START into W/realtext/round. The mix is made in
# W/realtext/data from this machine's man pages and READMEs, or unpacked from REALTEXT (a tar.xz of
# a data folder's mix4/, as gpu_chain.sh's machine lacks those sources:
# `tar -C build/realtext-bal2/data -cJf realtext.tar.xz mix4`).
# Env START, W, STEPS (default 900), REALTEXT; THREADS, DEVICE and TRAIN_FLAGS as the round reads
# them.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../../.."
data="$W/realtext/data"
if [[ -n ${REALTEXT:-} && ! -s $data/mix4/dev.jsonl ]]; then
  mkdir -p "$data" && tar -C "$data" -xJf "$REALTEXT"
fi
# shellcheck source=bench/results/minilm_eval/realtext/cf-drill-first/round6.sh
source "$HERE/round6.sh"
env "${ROUND6[@]}" TRAIN_ONLY=1 STEPS="${STEPS:-900}" tools/train_minilm_tables.sh "$START" \
  "$W/realtext"
