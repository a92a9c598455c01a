#!/usr/bin/env bash
# Session 52: the two-hop drill BEFORE the long-document stage, so that the long stage keeps the
# second hop instead of the drill breaking the rest (session 51 drilled after it: two-hop 0.92 on
# the drill's dev set, but forced on 2k-8k dev two-hop 4 of 22, one-hop 0.84, yes/no 0.39).
# 1. Session 51's data and start (models/demo -> fp32, SSCSSC, zero centroids) in build/cf-r9.
# 2. The drill from that start: 12-city documents, 40% two-hop with one-hop, yes/no and
#    unanswerable kept (20% each), 200 steps of 220-600 tokens then 200 of 600-2,000.
# 3. Session 51's 600-step long-document stage from the drilled model, its mix plus 100 12-city
#    documents of 4k-16k tokens (the same kinds), so that the long stage sees the hop where chance
#    is low; then session 51's scoring (long-tail, calibration, test, forced margins).
set -euo pipefail
cd "$(dirname "$0")/../../../../.."
W=build/cf-r9
KINDS=two_hop,two_hop,one_hop,yes_no,unanswerable
R6=bench/results/minilm_eval/realtext/cf-from-round6/run.sh
W=$W PREPARE_ONLY=1 bash $R6
[[ -s $W/init-drill/model.safetensors ]] || WORK=$W KINDS=$KINDS LENGTHS=220-600/600-2000 \
  STAGE_STEPS=200 STEPS=400 EXAMPLES=3000 EVAL_EVERY=200 THREADS=2 tools/train_minilm_drill.sh init
[[ -s $W/data/h2/dev.jsonl ]] || python3 tools/make_dataset.py --out $W/data/h2 --seed 37 \
  --train 100 --dev 20 --test 0 --min_tokens 4000 --max_tokens 16000 --kinds $KINDS --min_cities 12
W=$W START=$W/init-drill MIX_EXTRA="h2/train:h2-:0:100" bash $R6
