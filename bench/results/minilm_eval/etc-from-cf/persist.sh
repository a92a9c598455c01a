#!/usr/bin/env bash
# Session 72: keeps an ETC model of long-round.sh past the checkout (build/ does not survive a new
# one: session 71's was lost with it). Ships build/etc-cf/NAME in bf16 (weights, config with its
# entity tokens and pooling, tokenizer; no optimizer state: 45 MB) into
# models/checkpoints/etc_minilm, with the null threshold score_model.sh calibrated on the first
# 100 8k-32k dev documents (NAME-calib-long100.txt beside this script) and a `stage` file naming
# the run. rebuild.sh makes the model again from models/checkpoints/cluster_former_minilm.
# Session 73: the folder's checks and sample (checks.jsonl, sample.txt, sample_questions.json:
# make_checks.py's and hand-written; demo_model_test asks them of the new weights) are kept.
# Session 74: BANDS=report (a `longqa eval --calibrate_null --null_bands=4096` report, e.g. of
# calib3: man-page, README-prose and the same 100 8k-32k dev documents): the threshold for
# documents under 4,096 tokens and the band for longer ones are that report's, so short real
# documents are not held to the 8k-32k threshold.
# Usage: persist.sh NAME
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../.."
name="$1" P=models/checkpoints/etc_minilm
t=$(tools/calibrated_threshold.sh "$HERE/$name-calib-long100.txt")
thresholds=("--null_threshold=$t")
if [[ -n ${BANDS:-} ]]; then
  flags=$(tools/calibrated_threshold.sh --ship_flags "$BANDS")  # stops here if it has none
  mapfile -t thresholds <<< "$flags"
  t="${thresholds[*]}"
fi
python3 -c 'import json, sys; print("step", json.load(open(sys.argv[1]))["step"])' \
  "build/etc-cf/$name/trainer_state.json"
rm -rf "$P.new"  # shipped beside the kept folder, which is replaced only once this worked
.venv/bin/python tools/ship_model.py "build/etc-cf/$name" "$P.new" --dtype bf16 \
  --answer_score=type+long "${thresholds[@]}"
for f in checks.jsonl sample.txt sample_questions.json; do
  [[ ! -e $P/$f ]] || cp "$P/$f" "$P.new/"
done
rm -rf "$P" && mv "$P.new" "$P"
echo "$name (etc-from-cf/rebuild.sh; null threshold $t)" > "$P/stage"
du -sh "$P"
