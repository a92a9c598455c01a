#!/usr/bin/env bash
# The tail of a real-English training round (tools/train_minilm_realtext.sh,
# tools/train_minilm_tables.sh): the null threshold (and, with NULL_BANDS, one per document-length
# band) chosen on a calibration set with the checkpoint served at its default precision
# (`longqa eval --calibrate_null`, docs/cli.md; on a CPU without bf16 that is int8 with rounded
# weights: the checkpoint has no calibration text; rounds 5 and 6 were calibrated so), the bf16
# folder with it (tools/ship_model.py), then the scores per question kind
# (tools/demo_report.py) of that folder on each test set, in EVAL/<set with / as ->/.
# Usage: tools/ship_realtext_round.sh CHECKPOINT CALIB.jsonl EVAL SHIPPED FROM DATA SET...
#   FROM: the model folder the round started from (its int8 calibration text is copied, else
#   models/demo's); DATA: the folder of the sets (DATA/SET.jsonl; DATA/real.jsonl is made from
#   bench/real_text). Env BUILD, PYTHON, THREADS, NULL_BANDS (e.g. 4096).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export BUILD="${BUILD:-$ROOT/build}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
checkpoint="$1" calib="$2" eval="$3" shipped="$4" from="$5" data="$6"
shift 6

name="$(basename "$checkpoint")"
EVAL_FLAGS="--calibrate_null ${NULL_BANDS:+--null_bands=$NULL_BANDS}" \
  "$ROOT/tools/eval_demo.sh" "$calib" "$eval/calib" "$checkpoint"
# The last run's threshold and bands: ship_model.py's flags (a command substitution, not a process
# substitution: set -e stops here when the report holds no calibrated threshold).
flags=$("$ROOT/tools/calibrated_threshold.sh" --ship_flags "$eval/calib/$name.txt")
mapfile -t thresholds <<< "$flags"
"$PYTHON" "$ROOT/tools/ship_model.py" "$checkpoint" "$shipped" --dtype bf16 "${thresholds[@]}" \
  --default_precision bf16,int8 --int8_recheck_margin 0.3
# int8's calibration text (tools/make_calibration_text.py): the model's own, else models/demo's.
cp "$from/calibration.txt" "$shipped/" 2>/dev/null ||
  cp "$ROOT/models/demo/calibration.txt" "$shipped/"
"$PYTHON" "$ROOT/bench/real_text/make_gold.py" "$data/real.jsonl"
folder=$(basename "$shipped")  # eval_demo.sh names the predictions after it
for set in "$@"; do
  gold="$data/$set.jsonl"
  out="$eval/${set//\//-}"
  "$ROOT/tools/eval_demo.sh" "$gold" "$out" "$shipped"
  "$PYTHON" "$ROOT/tools/demo_report.py" "$gold" "$folder=$out/$folder.predictions.json" |
    tee "$out/$folder.kinds.md"
done
