#!/usr/bin/env bash
# Session 50: the Cluster-Former with its 16 centroids rebuilt (K=16 rebuild_centroids.sh makes
# build/cf-r6/k16, answer_score type+long): threshold chosen by the server's calibration on the
# first 100 generated 8k-32k dev documents, then the 200-document test split.
set -euo pipefail
cd "$(dirname "$0")/../../../../../../.."
W=build/cf-r6
THREADS=2 EVAL_FLAGS="--calibrate_null --timeout_s=900" tools/eval_demo.sh build/cf-r5/long100.jsonl $W/eval/k16-calib $W/k16
t=$(tools/calibrated_threshold.sh $W/eval/k16-calib/k16.txt)
.venv/bin/python tools/ship_model.py $W/k16 $W/k16-ship --dtype f32 --answer_score=type+long --null_threshold=$t
THREADS=2 EVAL_FLAGS="--timeout_s=900" tools/eval_demo.sh build/realtext-tables5/data/long/test.jsonl $W/eval/long-test-k16 $W/k16-ship
