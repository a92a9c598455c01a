#!/usr/bin/env bash
# Session 52: the two-hop drill first, from the start folder of session 51's Cluster-Former
# (models/demo -> fp32, layers SSCSSC, zero centroids), with a curriculum of document lengths so
# that the second hop is learned where its two paragraphs lie in different windows.
# 1. Session 51's data and start folder, in build/cf-r9.
# 2. A mixed drill (12-city documents; 40% two-hop, one-hop, yes/no and unanswerable 20% each),
#    200 steps of 220-600 tokens then 200 of 600-2,000: two-hop 0.28 then 0.00 on the drill's dev
#    sets (mixed-drill-train.log).
# 3. The two-hop drill (two questions in three two-hop, the rest one-hop) from step 2's 220-600
#    model: 250 steps of 220-600 tokens, 450 of 600-2,000 (hop-drill-train.log), then 300 of
#    2,000-8,000 (hop-drill-long-train.log).
# 4. Every answer forced (ship_model.py --null_threshold=-1000) on the 100 2k-8k dev documents
#    and the first 100 8k-32k dev documents (tools/make_dataset.py's usual kinds and cities),
#    beside the shipped sliding-window model (models/demo) forced the same way.
# 5. (Session 53) The 600-2,000 model with 16 to 512 centroids a cluster layer, refitted, forced.
# LONG_STAGE=1 then runs session 51's long-document stage and its scoring from the hop
# drill's 600-2,000 model (the 2,000-8,000 stage cost one-hop and gained nothing) with 256
# centroids a cluster layer, its mix plus 100 12-city documents of 4k-16k tokens, 300 steps (session
# 53: 10 s a step, against session 51's 8).
set -euo pipefail
cd "$(dirname "$0")/../../../../.."
export W=build/cf-r9  # session 51's run.sh works in W
R6=bench/results/minilm_eval/realtext/cf-from-round6/run.sh
MIXED=two_hop,two_hop,one_hop,yes_no,unanswerable  # the mixed drill's kinds, and h2's
PREPARE_ONLY=1 bash $R6
drill() {  # variant, then settings (env) for tools/train_minilm_drill.sh
  local v="$1"; shift
  [[ -s $W/$v-drill/model.safetensors ]] ||
    env WORK=$W THREADS=2 "$@" tools/train_minilm_drill.sh "$v"
}
drill init KINDS=$MIXED LENGTHS=220-600/600-2000 \
  STAGE_STEPS=200 STEPS=400 EXAMPLES=3000 EVAL_EVERY=200
[[ -d $W/hop0 ]] || cp -r $W/init-drill/stage-0 $W/hop0
drill hop0 LENGTHS=220-600/600-2000 STAGE_STEPS=250 STEPS=700 EXAMPLES=4000 EVAL_EVERY=250
drill hop0-drill LENGTHS=2000-8000 STEPS=300 EXAMPLES=6000 EVAL_EVERY=150
# shellcheck source=bench/results/minilm_eval/realtext/cf-drill-first/forced.sh
source bench/results/minilm_eval/realtext/cf-drill-first/forced.sh  # score, ship_forced, forced
forced hop-600-2000 $W/hop0-drill
forced hop-drilled $W/hop0-drill-drill
forced sliding models/demo
# The 600-2,000 model on the 2,000-8,000 stage's dev set, as that stage's monitor scores it after.
score $W/data/drill-12-2000-8000/dev.jsonl $W/eval/drill2k8k hop-600-2000
# Session 53: the same model with more centroids, none of its weights trained again: the two cluster
# layers' centroids replaced by K zero rows and refitted in layer order by longqa-centroids on 15
# 4k-16k-token training documents (K 16 too: the refit alone), every answer forced.
with_clusters() {  # model folder, K, output folder
  [[ -s $3/model.safetensors ]] && return
  rm -rf "$3" && cp -r "$1" "$3"
  .venv/bin/python bench/results/minilm_eval/realtext/cf-drill-first/zero_centroids.py "$3" "$2"
  build/tools/longqa-centroids --model_dir="$3" --corpus=$W/centroid-corpus.jsonl --threads=2
}
head -n 15 $W/data/s4/train.jsonl > $W/centroid-corpus.jsonl
for k in 16 64 128 256 512; do
  with_clusters $W/forced/hop-600-2000 $k $W/forced/k$k
  score $W/data/mid/dev.jsonl $W/eval/mid k$k
  [[ $k == 16 || $k == 64 ]] || score $W/long100.jsonl $W/eval/long100 k$k
done
[[ -n "${LONG_STAGE:-}" ]] || exit 0
[[ -s $W/data/h2/dev.jsonl ]] || python3 tools/make_dataset.py --out $W/data/h2 --seed 37 \
  --train 100 --dev 20 --test 0 --min_tokens 4000 --max_tokens 16000 --min_cities 12 \
  --kinds $MIXED
# Session 53: from the hop drill's model with 256 centroids a cluster layer (about 125 rows a
# cluster on average at 32k tokens, under a chunk of 224); longqa-train fits them before step 1.
with_clusters $W/hop0-drill 256 $W/hop0-k256
STEPS=300 START=$W/hop0-k256 MIX_EXTRA="h2/train:h2-:0:100" bash $R6
# Every answer forced on the 2k-8k dev documents; then its centroids refitted to 16 (for
# company_margins.sh: is the company questions' null in the weights or in the cluster count?).
ship_forced k256-long-stage $W/round
score $W/data/mid/dev.jsonl $W/eval/mid k256-long-stage
with_clusters $W/forced/k256-long-stage 16 $W/forced/ls-k16
