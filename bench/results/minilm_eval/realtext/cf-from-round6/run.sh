#!/usr/bin/env bash
# Session 51: a Cluster-Former made from models/demo (round 6, sliding-window) alone, so that it can
# be made again from what the repository holds (the session-47-50 runs started from round 5's fp32
# folder and a 900-step continuation that lived only in build/). Layers 3 and 6 become cluster
# layers (SSCSSC, 16 centroids each; longqa-train fits the first centroids), then 600 steps with
# the sampled memory bank and the final refit on generated documents only, a quarter of them
# 16k-32k tokens long (earlier runs stopped at 16k and read worst past 81 kB). Then answers forced
# on the 74 long-tail questions, the threshold calibrated on the first 100 8k-32k dev documents and
# the 200 test documents scored, as in cf-from-round5/continued/sampled-bank/run.sh; then every
# answer forced and the margins per kind and phrasing (margins.py).
# Env (session 52's cf-drill-first/run.sh): W (the work folder, default build/cf-r8), START (the
# model the 600 steps start from, default W/init), MIX_EXTRA (more mix_sets.py rows, e.g.
# "h2/train:h2-:0:100" from W/data), PREPARE_ONLY=1 (stop once the data and W/init are made),
# NO_INIT=1 (no W/init: the data alone, for a chain that starts from a later model; gpu_chain.sh).
set -euo pipefail
cd "$(dirname "$0")/../../../../.."
W="${W:-build/cf-r8}"
START="${START:-$W/init}"
D=$W/data
PY=.venv/bin/python
# The generated sets of tools/train_minilm.sh (long, mid, s3 used here), then the longer ones.
DATA_ONLY=1 PYTHON=python3 tools/train_minilm.sh $W
split() {  # name seed train dev test min max
  [[ -s "$D/$1/dev.jsonl" ]] || python3 tools/make_dataset.py --out "$D/$1" --seed "$2" \
    --train "$3" --dev "$4" --test "$5" --min_tokens "$6" --max_tokens "$7"
}
split s4 34 400 40 0 4000 16000
split s5 35 150 10 0 8000 16000
split s6 36 150 10 0 16000 32000
python3 tools/mix_sets.py $D cf/train.jsonl --seed 23 s3/train:s3-:0:300 s4/train:s4-:0:250 \
  s5/train:s5-:0:150 s6/train:s6-:0:150 ${MIX_EXTRA:-}
head -n 100 $D/long/dev.jsonl > $W/long100.jsonl
# The 74 one-hop and yes/no test questions whose documents have 81 kB or more.
python3 - "$D/long/test.jsonl" "$W/long-tail.jsonl" <<'PY'
import json, sys
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1]):
        gold = json.loads(line)
        size = len("\n\n".join(gold["paragraphs"]).encode())
        if gold["kind"] in ("one_hop", "yes_no") and size >= 81000:
            out.write(line)
PY
# The start: round 6 in fp32 with two cluster layers and zero centroids.
if [[ -z ${NO_INIT:-} && ! -s $W/init/model.safetensors ]]; then
  $PY tools/ship_model.py models/demo $W/init --dtype f32
  $PY - $W/init <<'PY'
import json, sys, torch
from safetensors.torch import load_file, save_file
folder = sys.argv[1]
config = json.load(open(f"{folder}/config.json"))
config.update(layers="SSCSSC", num_clusters=[16, 16])
json.dump(config, open(f"{folder}/config.json", "w"), indent=2, sort_keys=True)
weights = load_file(f"{folder}/model.safetensors")
for layer in (2, 5):
    weights[f"encoder.layer.{layer}.centroids"] = torch.zeros(16, config["hidden_size"])
save_file(weights, f"{folder}/model.safetensors")
PY
fi
[[ -z "${PREPARE_ONLY:-}" ]] || exit 0
stdbuf -oL build/train/longqa-train --init_model "$START" --out $W/round \
  --stages $D/cf/train.jsonl --stage_dev $D/s4/dev.jsonl --long_dev $D/mid/dev.jsonl \
  --steps "${STEPS:-600}" --lr 3e-5 --warmup 20 --seed 11 --eval_every 150 --batch_tokens 2048 \
  --max_batch 8 --eval_examples 20 --centroid_every 100 --save_every 25 --threads 2 --device cpu \
  2>&1 | tee -a $W/train.log
$PY tools/ship_model.py $W/round $W/tl --dtype f32 --answer_score=type+long
ev() { THREADS=2 EVAL_FLAGS="$1" tools/eval_demo.sh "$2" "$3" "$4"; }
ev "--calibrate_null --timeout_s=900" $W/long-tail.jsonl $W/eval/long-tail $W/tl
ev "--calibrate_null --timeout_s=900" $W/long100.jsonl $W/eval/calib $W/tl
t=$(tools/calibrated_threshold.sh $W/eval/calib/tl.txt)
$PY tools/ship_model.py $W/round $W/ship --dtype f32 --answer_score=type+long --null_threshold="$t"
ev "--timeout_s=900" $D/long/test.jsonl $W/eval/test $W/ship
# Every answer forced with the shipped folder (session 48's null_scores.py), then the margins.
# shellcheck source=tools/start_server.sh
source tools/start_server.sh
start_server build $W/eval/scores.server.log --model_dir=$W/ship --metrics_listen= --threads=2 \
  --max_batch_tokens=32768
NS=bench/results/minilm_eval/realtext/cf-from-round5/continued/null_scores.py
python3 $NS collect "$port" $W/long100.jsonl $W/dev100-scores.json
python3 $NS collect "$port" $D/long/test.jsonl $W/test200-scores.json
kill "$server_pid"
python3 bench/results/minilm_eval/realtext/cf-from-round6/margins.py $D/long/test.jsonl \
  $W/test200-scores.json "$t"
