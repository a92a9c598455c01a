#!/usr/bin/env bash
# Session 53: does the long stage's company-question null go with unanswerable questions balanced
# across attributes? 150 steps more from run.sh's long-stage model (build/cf-r9/round, 256
# centroids) on new generated documents made with make_dataset.py --unanswerable attributes (250
# of 4k-16k tokens, 100 of 16k-32k, and run.sh's 100 12-city h2 documents), session 51's settings
# otherwise; then company_margins.sh's questions and the first 100 8k-32k dev documents, every
# answer forced. Run after run.sh LONG_STAGE=1.
set -euo pipefail
cd "$(dirname "$0")/../../../../.."
W=build/cf-r9
D=$W/data
split() {  # name seed train min max
  [[ -s "$D/$1/train.jsonl" ]] || python3 tools/make_dataset.py --out "$D/$1" --seed "$2" \
    --train "$3" --dev 0 --test 0 --min_tokens "$4" --max_tokens "$5" --unanswerable attributes
}
split b4 44 250 4000 16000
split b6 46 100 16000 32000
python3 tools/mix_sets.py $D balanced/train.jsonl --seed 24 b4/train:b4-:0:250 \
  b6/train:b6-:0:100 h2/train:h2-:0:100
stdbuf -oL build/train/longqa-train --init_model $W/round --out $W/balanced \
  --stages $D/balanced/train.jsonl --long_dev $D/mid/dev.jsonl --steps 150 --lr 3e-5 \
  --warmup 10 --seed 12 --eval_every 150 --batch_tokens 2048 --max_batch 8 --eval_examples 20 \
  --centroid_every 100 --save_every 25 --threads 2 --device cpu 2>&1 | tee -a $W/balanced.log
# shellcheck source=bench/results/minilm_eval/realtext/cf-drill-first/forced.sh
source bench/results/minilm_eval/realtext/cf-drill-first/forced.sh
ship_forced balanced $W/balanced
# shellcheck source=tools/start_server.sh
source tools/start_server.sh
start_server build $W/balanced-scores.server.log --model_dir=$W/forced/balanced \
  --metrics_listen= --threads=2 --max_batch_tokens=32768
NS=bench/results/minilm_eval/realtext/cf-from-round5/continued/null_scores.py
python3 $NS collect "$port" $W/company9.jsonl $W/company-balanced.json > /dev/null
python3 $NS collect "$port" $W/long100.jsonl $W/balanced-dev100-scores.json > /dev/null
kill "$server_pid"
# The long stage's calibrated threshold, as cf-from-round6/run.sh reads it.
t=$(tools/calibrated_threshold.sh $W/eval/calib/tl.txt)
python3 bench/results/minilm_eval/realtext/cf-from-round6/margins.py $W/company9.jsonl \
  $W/company-balanced.json "$t"
python3 bench/results/minilm_eval/realtext/cf-from-round6/margins.py $W/long100.jsonl \
  $W/balanced-dev100-scores.json "$t"
