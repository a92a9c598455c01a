#!/usr/bin/env bash
# Session 70: the ETC drill model (run.sh, ENTITIES=64: entity tokens linked to their mentions)
# through the kept Cluster-Former's last round (realtext/cf-drill-first/matched-round.sh's
# matchedwidesimilar120: 1,850 short real-English and generated rows and 120 generated 8k-32k
# documents, 900 steps at 2e-5, the same trainer flags and shuffle), so that it reads 8k-32k
# documents again; then scored as every Cluster-Former is (score_model.sh, served, the fixed
# splits). Env: W (build/matched: its data/ holds the round's mix), START (the model trained
# from: the drill model, or session 73's kept folder), NAME (etc-ent64-long), STEPS (900), LR
# (2e-5), ROUND_SEED (8: the trainer's shuffle; session 73; not SEED, which the data scripts
# below read). Session 72: the round's data made where it is missing (a new checkout: build/
# does not survive one): round 6's sets (realtext.sh's DATA_ONLY step) and the
# matchedwidesimilar120 mix (matched-round.sh with DATA_ONLY=1).
# Session 74: LONG_SEED (make_dataset.py's seed for the 120 long documents, default 81) and
# SHORT_FROM (the first short row taken from the short mix, default 0) make the same recipe on rows
# no earlier round saw (LONG_SEED=82 SHORT_FROM=1850).
# Session 75: CONTRAST=N adds contrast pairs (tools/contrast_rows.py: a one-hop row, and the same
# document without its answer's sentence, unanswerable) made from the first N rows of the matched
# short set s1 and the first N/2 of s2, rows no round took (mix4m takes s1 4800: and s2 3200:);
# the mix is named -contrastN.
# Session 76: CONTRAST_FROM=F takes the pairs from s1 rows F..F+N and s2 rows F/2..(F+N)/2 instead
# (700: rows no round and no held-out check took; contrast-heldout used s1 400-700, s2 200-350);
# the mix is named -contrastN-fromF. TRAIN_FLAGS adds trainer flags (--recompute_layers: training
# at etc.max_segments 2048, one segment token a paragraph, fits memory).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../.."
W="${W:-build/matched}" START="${START:-build/etc-cf/drill-ent64}" NAME="${NAME:-etc-ent64-long}"
LONG_SEED="${LONG_SEED:-81}" SHORT_FROM="${SHORT_FROM:-0}"
mix=$W/data/mix-long120-seed$LONG_SEED-matched-wide-similar0.5-mix4m-wide-similar0.5
[[ $SHORT_FROM == 0 ]] || mix+=-from$SHORT_FROM
out=build/etc-cf/$NAME init=build/etc-cf/$NAME-init
cf=bench/results/minilm_eval/realtext/cf-drill-first
if [[ ! -s $mix/train.jsonl ]]; then
  # shellcheck source=bench/results/minilm_eval/realtext/cf-drill-first/round6.sh
  source "$cf/round6.sh"
  env "${ROUND6[@]}" DATA_ONLY=1 tools/train_minilm_tables.sh models/demo "$W"
  W=$W PHRASINGS=wide SIMILAR=0.5 SEED=$LONG_SEED SHORT_FROM=$SHORT_FROM DATA_ONLY=1 \
    "$cf/matched-round.sh"
fi
if [[ ${CONTRAST:-0} != 0 ]]; then
  D=$W/data F=${CONTRAST_FROM:-0} pairs=contrast-s1-$CONTRAST-s2-$((CONTRAST / 2))
  tag=-contrast$CONTRAST
  [[ $F == 0 ]] || { pairs+=-from$F; tag+=-from$F; }
  mkdir -p "$D/$pairs"
  for set in "s1:$F:$((F + CONTRAST))" "s2:$((F / 2)):$(((F + CONTRAST) / 2))"; do
    IFS=: read -r name first last <<< "$set"
    python3 tools/contrast_rows.py "$D/$name-matched-wide-similar0.5/train.jsonl" \
      "$D/$pairs/$name.jsonl" --first "$first" --last "$last"
  done
  python3 tools/mix_sets.py "$D" "${mix#"$D/"}$tag/train.jsonl" --seed 27 \
    "${mix#"$D/"}/train::0:" "$pairs/s1:c-:0:" "$pairs/s2:c-:0:"
  mix+=$tag
fi
[[ -s $W/long100.jsonl ]] || head -100 "$W/data/long/dev.jsonl" > "$W/long100.jsonl"
if [[ ! -s $init/config.json ]]; then  # the model's files only, not the trainer's state
  mkdir -p "$init"
  find "$START" -maxdepth 1 -type f ! -name optimizer.safetensors ! -name trainer_state.json \
    -exec cp -t "$init/" {} +
fi
env -u OPENBLAS_CORETYPE stdbuf -oL build/train/longqa-train --init_model "$init" --out "$out" \
  --stages "$mix/train.jsonl" --stage_dev "$W/data/mix4/dev.jsonl" --steps "${STEPS:-900}" \
  --lr "${LR:-2e-5}" --warmup 20 --seed "${ROUND_SEED:-8}" --eval_every 200 --batch_tokens 2048 \
  --max_batch 8 --eval_examples 90 --save_every 50 --threads 2 --device cpu ${TRAIN_FLAGS:-} \
  >> "$out.log" 2>&1
cp "$out.log" "$HERE/$NAME-train.log"
W=$W SERVED_ONLY=1 bash "$cf/score_model.sh" "$NAME" "$out"
# score_model.sh leaves its reports beside itself: they belong here, with the per-kind table.
mv "$cf/$NAME-calib-long100.txt" "$cf/$NAME-test.txt" "$HERE/"
.venv/bin/python tools/demo_report.py "$W/data/long/test.jsonl" \
  "etc=$W/eval/test/ship-$NAME.predictions.json" > "$HERE/$NAME-test.kinds.md"
