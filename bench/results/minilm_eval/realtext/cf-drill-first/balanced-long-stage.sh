#!/usr/bin/env bash
# Session 54: run.sh's long stage again (LONG_STAGE=1: from the hop drill's 600-2,000 model with 256
# centroids a cluster layer, 300 steps, session 51's settings), its documents made with
# make_dataset.py --unanswerable attributes so that no attribute's questions are mostly
# unanswerable (run.sh's mix asks 126 unanswerable company questions against 38 answerable, and
# its model nulls 8 of the test split's 9 company questions), and with 200 12-city documents of
# 4k-16k tokens (two-hop 40%) where run.sh has 100: the mix's sizes and lengths otherwise as
# cf-from-round6/run.sh's (300 of 2k-4k, 250 of 4k-16k, 150 of 8k-16k, 150 of 16k-32k). Then
# score_model.sh (DATA_ONLY=1: stop once the mix is made). Run after run.sh LONG_STAGE=1 (its
# data, hop0-k256 and dev sets).
# Env W (work folder, default build/cf-r9); START, OUT and NAME (another start model, its output
# folder in W and the results' name; session 55: the letters drill's model, letters-drill.sh);
# TRAIN_ONLY=1 (stop once trained: rebuild.sh).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../../.."
W="${W:-build/cf-r9}"
D=$W/data
MIXED=two_hop,two_hop,one_hop,yes_no,unanswerable
# Env K16=1: the control, from the hop drill's model as it was trained (16 centroids a cluster layer).
# Env NAMES=letters: every document's names made of letters (make_dataset.py --names letters), not
# of the 35 syllables the drills' names had (session 54: the test split's nulls follow its names).
NAMES="${NAMES:-syllables}"
S=""  # the data folders' suffix, and the default output's
[[ $NAMES == syllables ]] || S=-$NAMES
START="${START:-$W/hop0-k256}" OUT="${OUT:-bls$S}" NAME="${NAME:-balanced-long-stage$S}"
[[ -z "${K16:-}" ]] || START=$W/hop0-drill OUT=bls-k16$S NAME=balanced-long-stage-k16$S
split() {  # name seed train min max, then more make_dataset.py flags
  local name="$1" seed="$2" n="$3" min="$4" max="$5"
  shift 5
  [[ -s "$D/$name$S/train.jsonl" ]] || python3 tools/make_dataset.py --out "$D/$name$S" \
    --seed "$seed" --train "$n" --dev 0 --test 0 --min_tokens "$min" --max_tokens "$max" \
    --unanswerable attributes --names "$NAMES" "$@"
}
split t3 53 300 2000 4000
split b4 44 250 4000 16000  # balanced.sh's
split t5 55 150 8000 16000
split t6 56 150 16000 32000
split hb 57 200 4000 16000 --min_cities 12 --kinds $MIXED
python3 tools/mix_sets.py $D "bls$S/train.jsonl" --seed 25 "t3$S/train:t3-:0:300" \
  "b4$S/train:b4-:0:250" "t5$S/train:t5-:0:150" "t6$S/train:t6-:0:150" "hb$S/train:hb-:0:200"
# Founding is one of three or four attributes an unanswerable question draws from, so the mix still
# asks half as many founding questions again unanswerable as answerable (87 against 58): keep the
# first unanswerable questions with "found" in them (founding, and "When was O founded?") up to the
# answerable founding questions' count, so that neither answer is the question's prior.
python3 - "$D/bls$S/train.jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
founding = lambda r: "found" in r["question"].lower()
keep = sum(1 for r in rows if r["kind"] == "one_hop" and founding(r))
with open(sys.argv[1], "w") as out:
    for r in rows:
        if r["kind"] == "unanswerable" and founding(r):
            if keep == 0:
                continue
            keep -= 1
        out.write(json.dumps(r) + "\n")
PY
[[ -z "${DATA_ONLY:-}" ]] || exit 0
# shellcheck source=bench/results/minilm_eval/realtext/cf-drill-first/long_stage.sh
source "$HERE/long_stage.sh"
train_long_stage "$D/bls$S/train.jsonl" "${STEPS:-300}" 11 150
[[ -z "${TRAIN_ONLY:-}" ]] || exit 0
"$HERE/score_model.sh" "$NAME" "$W/$OUT"
