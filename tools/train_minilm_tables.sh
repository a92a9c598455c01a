#!/usr/bin/env bash
# Teaches a real-English model to read tables (docs/demo-model.md, "Tables in bulk"): one round
# from FROM (a model folder, e.g. models/demo) on the prose round's data (tools/
# train_minilm_realtext.sh with PROSE=1, DATA_ONLY=1) plus tools/make_table_dataset.py's tables
# (this machine's package, service and protocol records set in README files of the training
# split), mixed with man-page and synthetic examples so the other skills stay; then the null
# threshold on the prose round's calibration set, the bf16 folder (WORK/shipped) and the scores
# per kind on the same test sets as the prose round (WORK/eval). The test of table reading is the
# prose test split's real tables and bench/real_text's, never trained on (make_table_dataset
# hosts tables in training files only and asks with the seen wh-phrase only).
# Re-running resumes the training and redoes the scores.
# Usage: tools/train_minilm_tables.sh FROM [WORK]   (default WORK build/realtext-tables; env
# BUILD, THREADS (2), PYTHON, STEPS (600), TABLES (1500: table examples in the mix),
# LONG_TABLES (0: the share of tables of 10-60 rows), BY_MEANING (0: the share of package and
# protocol table questions that name their row by its description), TABLE_HEADER_TOKENS (0: the
# model as FROM has it; N: trained from a copy of FROM whose windows carry up to N tokens of a
# table's header, config.json table_header_tokens), SETS (the test sets scored, default all six,
# and the table dev set), CALIB (the calibration set: calib3, the prose round's, by default;
# calib5: calib3 and prose-long's dev split, 150 real documents of 4k-32k words, unanswerable
# questions among them), NULL_BANDS (tools/ship_realtext_round.sh), DATA_ONLY (make the data sets,
# mixes and calibration sets, and stop: e.g. to score another model on the same sets with
# tools/ship_realtext_round.sh), TRAIN_ONLY (train and stop: no threshold, folder or scores; with
# WORK/data/mix4 in place, e.g. unpacked on a machine that lacks this one's man pages and READMEs,
# no data is made), DEVICE (the trainer's, default cpu), TRAIN_FLAGS (more longqa-train flags, e.g.
# --time_limit_s=300), MIX (the training mix's folder in WORK/data, default mix4: another mix made
# beside it, e.g. with long generated rows, trains with TRAIN_ONLY))
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export BUILD="${BUILD:-$ROOT/build}"
FROM="$1"
WORK="${2:-$BUILD/realtext-tables}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
export THREADS="${THREADS:-2}"  # the scoring (eval_demo.sh) too, not only the trainer
DATA="$WORK/data"

make_data() {
  PROSE=1 DATA_ONLY=1 PYTHON="$PYTHON" "$ROOT/tools/train_minilm_realtext.sh" "$FROM" "$WORK"
  if [[ ! -s "$DATA/tables/train.jsonl" ]]; then
    mapfile -d '' docs < "$DATA/prose-files"  # the prose set's files host the tables
    "$PYTHON" "$ROOT/tools/make_table_dataset.py" --out "$DATA/tables" --seed 17 \
      --train "${TABLES:-1500}" --dev 100 --test 0 --long_tables "${LONG_TABLES:-0}" \
      --by_meaning "${BY_MEANING:-0}" "${docs[@]}"
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
  [[ -s "$DATA/calib5.jsonl" ]] || mix calib5.jsonl calib3::0: prose-long/dev:prose-long-:0:
}
# TRAIN_ONLY with the round's mix in place: nothing to make (nor the sources to make it from).
[[ -n "${TRAIN_ONLY:-}" && -s "$DATA/mix4/dev.jsonl" ]] || make_data
[[ -z "${DATA_ONLY:-}" ]] || exit 0
init="$FROM"
if [[ "${TABLE_HEADER_TOKENS:-0}" != 0 ]]; then
  init="$WORK/init"
  if [[ ! -s "$init/config.json" ]]; then
    # The model's files only: a trainer's folder also holds its optimizer state and stage folders.
    mkdir -p "$init"
    find "$FROM" -maxdepth 1 -type f ! -name optimizer.safetensors ! -name trainer_state.json \
      -exec cp -t "$init/" {} +
    "$PYTHON" - "$init/config.json" "$TABLE_HEADER_TOKENS" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["table_header_tokens"] = int(sys.argv[2])
json.dump(config, open(sys.argv[1], "w"), indent=2)
PY
  fi
fi

# shellcheck disable=SC2086  # TRAIN_FLAGS: a word list
stdbuf -oL "$BUILD/train/longqa-train" --init_model "$init" --out "$WORK/round" \
  --stages "$DATA/${MIX:-mix4}/train.jsonl" --stage_dev "$DATA/mix4/dev.jsonl" \
  --steps "${STEPS:-600}" --lr 2e-5 --warmup 20 --seed 8 --eval_every 200 --batch_tokens 2048 \
  --max_batch 8 --eval_examples 90 --save_every 50 --threads "$THREADS" --device "${DEVICE:-cpu}" \
  ${TRAIN_FLAGS:-} >> "$WORK/round.log" 2>&1
[[ -z "${TRAIN_ONLY:-}" ]] || exit 0

# shellcheck disable=SC2086  # SETS: a word list
"$ROOT/tools/ship_realtext_round.sh" "$WORK/round" "$DATA/${CALIB:-calib3}.jsonl" "$WORK/eval" \
  "$WORK/shipped" "$FROM" "$DATA" \
  ${SETS:-prose/test real tables/dev man/test man-mdtest/test long/test prose-long/test}
