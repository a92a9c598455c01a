#!/usr/bin/env bash
# Teaches a real-English model to read tables (docs/demo-model.md, "Tables in bulk"): one round
# from FROM (a model folder, e.g. models/demo) on the prose round's data (tools/
# train_minilm_realtext.sh with PROSE=1, DATA_ONLY=1) plus tools/make_table_dataset.py's tables
# (this machine's package, service and protocol records set in README files of the training
# split), mixed with man-page and synthetic examples so the other skills stay; then the null
# threshold on the prose round's calibration set, the bf16 folder (WORK/shipped4) and the scores
# per kind on the same test sets as the prose round (WORK/eval4). The test of table reading is the
# prose test split's real tables, never trained on (its files are test files; make_table_dataset
# hosts tables in training files only and asks with the seen wh-phrase only).
# Re-running resumes the training and redoes the scores.
# Usage: tools/train_minilm_tables.sh FROM [WORK]   (default WORK build/realtext-tables; env
# BUILD, THREADS (2), PYTHON, STEPS (600), TABLES (1500: table examples in the mix), SETS (the
# test sets scored, default all six))
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export BUILD="${BUILD:-$ROOT/build}"
FROM="$1"
WORK="${2:-$BUILD/realtext-tables}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
THREADS="${THREADS:-2}"
DATA="$WORK/data"

PROSE=1 DATA_ONLY=1 PYTHON="$PYTHON" "$ROOT/tools/train_minilm_realtext.sh" "$FROM" "$WORK"
if [[ ! -s "$DATA/tables/train.jsonl" ]]; then
  mapfile -d '' docs < "$DATA/prose-files"  # the prose set's files host the tables
  "$PYTHON" "$ROOT/tools/make_table_dataset.py" --out "$DATA/tables" --seed 17 \
    --train "${TABLES:-1500}" --dev 100 --test 0 "${docs[@]}"
fi
# The mix: every prose question, the tables, and man-page and synthetic rows (some seen in the
# rounds before: replayed so that their skills stay).
mix() { "$PYTHON" "$ROOT/tools/mix_sets.py" "$DATA" "$@"; }
if [[ ! -s "$DATA/mix4/dev.jsonl" ]]; then
  mix mix4/train.jsonl --seed 14 prose/train:prose-:0: tables/train:table-:0: \
    man/train:man-:6800:7600 man-md/train:md-:5200:6000 s1/train:s1-:4800:6000 \
    s2/train:s2-:3200:4000
  mix mix4/dev.jsonl --seed 3 prose/dev:prose-:0:60 tables/dev:table-:0:40 man-md/dev:md-:0:40 \
    s1/dev:s1-:0:40
fi

stdbuf -oL "$BUILD/train/longqa-train" --init_model "$FROM" --out "$WORK/realtext4" \
  --stages "$DATA/mix4/train.jsonl" --stage_dev "$DATA/mix4/dev.jsonl" --steps "${STEPS:-600}" \
  --lr 2e-5 --warmup 20 --seed 8 --eval_every 200 --batch_tokens 2048 --max_batch 8 \
  --eval_examples 90 --save_every 50 --threads "$THREADS" --device cpu >> "$WORK/realtext4.log" 2>&1

eval="$WORK/eval4" shipped="$WORK/shipped4"
EVAL_FLAGS="--calibrate_null" "$ROOT/tools/eval_demo.sh" "$DATA/calib3.jsonl" "$eval/calib" \
  "$WORK/realtext4"
threshold=$(tac "$eval/calib/realtext4.txt" | sed -n 's/^null threshold \([^ ]*\) .*/\1/p;T;q')
"$PYTHON" "$ROOT/tools/ship_model.py" "$WORK/realtext4" "$shipped" --dtype bf16 \
  --null_threshold="$threshold" --default_precision bf16,int8 --int8_recheck_margin 0.3
cp "$FROM/calibration.txt" "$shipped/" 2>/dev/null ||
  cp "$ROOT/models/demo/calibration.txt" "$shipped/"
"$PYTHON" "$ROOT/bench/real_text/make_gold.py" "$DATA/real.jsonl"
for set in ${SETS:-prose/test man/test man-mdtest/test real long/test prose-long/test}; do
  gold="$DATA/$set.jsonl"
  name="${set//\//-}"
  "$ROOT/tools/eval_demo.sh" "$gold" "$eval/$name" "$shipped"
  "$PYTHON" "$ROOT/tools/demo_report.py" "$gold" "shipped4=$eval/$name/shipped4.predictions.json" |
    tee "$eval/$name/shipped4.kinds.md"
done
