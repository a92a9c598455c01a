#!/usr/bin/env bash
# Session 69: ETC started from the kept Cluster-Former's weights (models/checkpoints/
# cluster_former_minilm, tools/window_to_etc.py: same projections, zero relative labels, one
# segment token a paragraph up to 256, hard g2l mask), on the letters hop drill of session 55
# (220-600 then 600-2,000 tokens, 12 cities a document, two-hop four questions in seven, one-hop,
# yes/no and unanswerable one each), with and without ETC's supporting-fact head and loss
# (SUPPORTING=1; docs/model-format.md). The trainer's dev monitor scores the drill's dev sets by
# kind; logs land beside this script. Session 70: ENTITIES=N adds up to N entity tokens a document
# (etc.entity_globals: ETC's WikiHop links between a recurring name's global token and its
# mentions); PRIOR=P starts the "part of" label at P for each layer's mean query
# (window_to_etc.py --part_of_prior). Session 71: POOL=1 makes the entity tokens hold the mean of
# their mentions' states before every layer (etc.pool_entity_mentions). Session 72: STOP_AFTER=N
# stops once step N is done, on STEPS' schedule (longqa-train --stop_after): session 71's model
# is `POOL=1 PRIOR=4 ENTITIES=64 STEPS=700 STOP_AFTER=400`.
# Env: W (default build/etc-cf), SUPPORTING (1: the head and loss), ENTITIES (0), PRIOR, POOL, STEPS (1400),
# STAGE_STEPS (700), LR (1e-4), STOP_AFTER (0: run to STEPS).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../.."
W="${W:-build/etc-cf}"
kinds=two_hop,two_hop,two_hop,two_hop,one_hop,yes_no,unanswerable
name=drill init=init flags=(--hard_g2l_mask)
if [[ -n "${SUPPORTING:-}" ]]; then name=drill-sup init=init-sup flags+=(--supporting_fact_head); fi
if [[ "${ENTITIES:-0}" != 0 ]]; then
  name=$name-ent$ENTITIES init=$init-ent$ENTITIES flags+=(--entity_globals "$ENTITIES")
fi
if [[ -n "${POOL:-}" ]]; then name=$name-pool init=$init-pool flags+=(--pool_entity_mentions); fi
if [[ -n "${PRIOR:-}" ]]; then name=$name-prior$PRIOR init=$init-prior$PRIOR flags+=(--part_of_prior "$PRIOR"); fi
[[ -s $W/$init/model.safetensors ]] ||
  .venv/bin/python tools/window_to_etc.py models/checkpoints/cluster_former_minilm "$W/$init" \
    "${flags[@]}"
# make_dataset.py writes "supporting" since session 69; the run without the head ignores it.
data=$W/data-sup
for stage in "s1 51 4000 220 600" "s2 52 1261 600 2000"; do
  read -r s seed n lo hi <<< "$stage"
  [[ -s $data/drill-$s/dev.jsonl ]] ||
    .venv/bin/python tools/make_dataset.py --out "$data/drill-$s" --seed "$seed" --train "$n" \
      --dev 100 --test 0 --min_tokens "$lo" --max_tokens "$hi" --kinds $kinds --min_cities 12 \
      --names letters --unanswerable attributes
done
env -u OPENBLAS_CORETYPE stdbuf -oL build/train/longqa-train --init_model "$W/$init" \
  --out "$W/$name" --stages "$data/drill-s1/train.jsonl,$data/drill-s2/train.jsonl" \
  --stage_dev "$data/drill-s1/dev.jsonl,$data/drill-s2/dev.jsonl" \
  --max_stage_steps "${STAGE_STEPS:-700}" --steps "${STEPS:-1400}" --batch_tokens 4096 \
  --max_batch 16 --lr "${LR:-1e-4}" --warmup 100 --min_stage_steps 300 --advance_accuracy 0.9 \
  --advance_window 400 --eval_every 200 --eval_examples 100 --save_every 100 --log_every 20 \
  --keep_stage_models --threads 2 --device cpu --seed 5 --stop_after "${STOP_AFTER:-0}" \
  >> "$W/$name.log" 2>&1
cp "$W/$name.log" "$HERE/$name-train.log"
