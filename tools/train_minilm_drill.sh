#!/usr/bin/env bash
# Trains a variant on the two-hop drill: short documents (220-600 target tokens) with at least
# CITIES cities (default 12), two questions in three two-hop, the rest one-hop (KINDS: another
# mix, make_dataset.py's --kinds, e.g. with yes_no and unanswerable kept in). Why: with the
# generator's usual 3 cities a short document's two-hop answer is right 1 time in 3 by picking
# any city's paragraph (bench/results/minilm_eval/etcseg-twohop-long-gpu/two_hop_chance.txt),
# which is all the two-hop stages ever taught; with 12 chance is 0.08, so only the second hop (the
# city named in P's birth paragraph, matched to the paragraph naming its country) passes it.
# Session 29 drilled 450 steps on the CPU (0.9M document tokens) and stayed at chance; this is the
# same drill sized for a GPU lease (larger batches, many more examples). Session 31 (H200, from
# the lift): Cluster-Former learned the second hop (two-hop long right 0.90-0.97 on the drill's
# dev set after 3,000-4,000 steps), the per-paragraph ETC did not (0.15 after 1,460 steps):
# docs/demo-model.md.
# LENGTHS (default 220-600) makes it a curriculum of document lengths, e.g.
# 220-600/600-2000/2000-8000: a stage ends at 90% training accuracy (after 300 steps) or after
# STAGE_STEPS, the last takes the rest; the same skill is needed where the two paragraphs lie
# thousands of tokens apart (the drilled Cluster-Former's two-hop: 0.27 at 2k-8k, chance 0.05).
# Starts from WORK/<variant> (trained, or a fresh lift: the one-hop questions teach spans too),
# writes WORK/<variant>-drill (and the model as each stage but the last ended in its stage-N, which
# tests/gpu/train_prebuilt.sh EVAL=1 scores); the trainer's dev monitor scores each stage's dev
# set by kind.
# Usage: tools/train_minilm_drill.sh [VARIANT]   (default etc; env WORK, BUILD, STEPS (default
# 4000), EXAMPLES (default 20000 of 220-600 tokens; a longer stage as many tokens), CITIES, KINDS
# (separated by "," or "/"), LENGTHS, STAGE_STEPS, BATCH_TOKENS (default 4096), MAX_BATCH (default
# 16), LR (default 1e-4), EVAL_EVERY (default 250), THREADS, DEVICE: cpu or cuda, PYTHON,
# TRAIN_FLAGS, NAMES and UNANSWERABLE: make_dataset.py's --names and --unanswerable, defaults
# syllables and questions)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
WORK="${WORK:-$BUILD/minilm-train}"
VARIANT="${1:-etc}"
CITIES="${CITIES:-12}"
LENGTHS="${LENGTHS:-220-600}"
KINDS="${KINDS:-two_hop,two_hop,one_hop}"
KINDS="${KINDS//\//,}"  # "/" also separates (tests/gpu/train_prebuilt.sh's settings split on ",")
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
# One data folder a mix and length (the default mix keeps the name of session 31's data); a
# stage's own seed, so that adding a stage does not change the others.
stages=() devs=() seed=51
mix="drill-$CITIES$([[ "$KINDS" == two_hop,two_hop,one_hop ]] || echo "-${KINDS//,/-}")"
NAMES="${NAMES:-syllables}" UNANSWERABLE="${UNANSWERABLE:-questions}"
[[ $NAMES == syllables ]] || mix+="-names-$NAMES"
[[ $UNANSWERABLE == questions ]] || mix+="-unanswerable-$UNANSWERABLE"
for range in ${LENGTHS//\// }; do
  data="$WORK/data/$mix"
  [[ "$range" == 220-600 ]] || data+="-$range"
  # EXAMPLES of 220-600 tokens, and as many document tokens in a longer stage.
  examples=$(("${EXAMPLES:-20000}" * 820 / (${range%-*} + ${range#*-})))
  [[ -s "$data/dev.jsonl" ]] || "$PYTHON" "$ROOT/tools/make_dataset.py" --out "$data" \
    --seed "$seed" --train "$((examples > 200 ? examples : 200))" --dev 100 --test 0 \
    --min_tokens "${range%-*}" --max_tokens "${range#*-}" --kinds "$KINDS" --min_cities "$CITIES" \
    --names "$NAMES" --unanswerable "$UNANSWERABLE"
  stages+=("$data/train.jsonl") devs+=("$data/dev.jsonl") seed=$((seed + 1))
done
[[ -s "$WORK/$VARIANT/model.safetensors" ]] || { echo "no $WORK/$VARIANT" >&2; exit 1; }
# shellcheck disable=SC2086  # TRAIN_FLAGS: several flags
exec stdbuf -oL "$BUILD/train/longqa-train" --init_model "$WORK/$VARIANT" \
  --out "$WORK/$VARIANT-drill" --stages "$(IFS=,; echo "${stages[*]}")" \
  --stage_dev "$(IFS=,; echo "${devs[*]}")" --max_stage_steps "${STAGE_STEPS:-0}" \
  --steps "${STEPS:-4000}" --batch_tokens "${BATCH_TOKENS:-4096}" --max_batch "${MAX_BATCH:-16}" \
  --lr "${LR:-1e-4}" --warmup 100 --min_stage_steps 300 --advance_accuracy 0.9 \
  --advance_window 400 --centroid_every 100 \
  --eval_every "${EVAL_EVERY:-250}" --eval_examples 100 --save_every 100 --log_every 20 \
  --keep_stage_models \
  --threads "${THREADS:-1}" --device "${DEVICE:-cpu}" --seed 5 \
  ${TRAIN_FLAGS:-} >> "$WORK/$VARIANT-drill.log" 2>&1
