#!/usr/bin/env bash
set -euo pipefail
cd /work/main
W=/work/minilm-train
EVAL_FLAGS=--calibrate_null THREADS=1 tools/eval_demo.sh $W/data/long/dev.jsonl /work/recal/dev-long models/demo $W/cluster_former-long
echo calib-done
