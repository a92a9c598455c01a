#!/usr/bin/env bash
# Session 50: the session-48 Cluster-Former run again (same start folder, data, seed, 600 steps)
# with the trainer's sampled memory bank (100,000 rows, 1,000 drawn from each pass; it was 20,000
# whole rows). The run was made before the trainer's final refit existed: --final_centroids 0
# reproduces it; the refit is then done by longqa-centroids with the trainer's own settings (the
# stage's first 20 examples, 100,000 rows, seed 10), which is what --final_centroids 20 does.
# Then answers forced on the 74 long-tail questions (as trained, refitted), the refit calibrated
# on the 100 8k-32k dev documents and scored on the 200 test documents.
set -euo pipefail
cd "$(dirname "$0")/../../../../../../.."
D=build/cf-r6/data
W=build/cf-r7
build/train/longqa-train --init_model build/cf-r6/init --out $W/round \
  --stages $D/cf/train.jsonl --stage_dev $D/s4/dev.jsonl --long_dev $D/mid/dev.jsonl --steps 600 \
  --lr 3e-5 --warmup 20 --seed 10 --eval_every 200 --batch_tokens 2048 --max_batch 8 \
  --eval_examples 20 --centroid_every 100 --save_every 25 --threads 2 --device cpu \
  --final_centroids 0
.venv/bin/python tools/ship_model.py $W/round $W/tl --dtype f32 --answer_score=type+long
THREADS=2 EVAL_FLAGS="--calibrate_null --timeout_s=900" tools/eval_demo.sh build/cf-r6/long-tail.jsonl $W/eval/long-tail $W/tl
rm -rf $W/refit && cp -r $W/tl $W/refit
head -n 20 $D/cf/train.jsonl > $W/first20.jsonl
build/tools/longqa-centroids --model_dir=$W/refit --corpus=$W/first20.jsonl --threads=2 --seed=10
THREADS=2 EVAL_FLAGS="--calibrate_null --timeout_s=900" tools/eval_demo.sh build/cf-r6/long-tail.jsonl $W/eval/long-tail-refit $W/refit
THREADS=2 EVAL_FLAGS="--calibrate_null --timeout_s=900" tools/eval_demo.sh build/cf-r5/long100.jsonl $W/eval/calib $W/refit
t=$(tools/calibrated_threshold.sh $W/eval/calib/refit.txt)
.venv/bin/python tools/ship_model.py $W/refit $W/refit-ship --dtype f32 --answer_score=type+long --null_threshold=$t
THREADS=2 EVAL_FLAGS="--timeout_s=900" tools/eval_demo.sh build/realtext-tables5/data/long/test.jsonl $W/eval/test $W/refit-ship
