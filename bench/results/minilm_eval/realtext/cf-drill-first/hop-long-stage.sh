#!/usr/bin/env bash
# Session 57: keep the hop trained where it fades. From the letters drill + 300 balanced long steps
# (build/cf-r10/lds300: the hop kept at 2k-8k tokens, every answer forced 13 of 22, but 3 of 20 at
# 8k-32k dev and 4 of 39 on test), a long stage whose documents are mostly 12-city documents of
# 8k-32k tokens (two-hop two questions in five, letter names), with rows of the balanced mix
# (bls-letters) so that one-hop, yes/no and unanswerable keep their share; lr 3e-5 as
# balanced-long-stage.sh. Then served as it would ship (score_model.sh) and every answer forced on
# the 2k-8k and the first 100 8k-32k dev documents (forced.sh, as run.sh).
# Env W (default build/cf-r10), START (default W/lds300), OUT, NAME, HOP (12-city rows, default
# 110), BALANCED (bls-letters rows, default 70), STEPS (default HOP + BALANCED: each row once),
# SEED (the 12-city documents' make_dataset.py seed, default 58; another seed, another folder),
# TRAIN_ONLY=1 (stop once trained: rebuild.sh).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../../.."
export W="${W:-build/cf-r10}"  # score_model.sh reads it too
D=$W/data
START="${START:-$W/lds300}" OUT="${OUT:-hls}" NAME="${NAME:-hop-long-stage}"
HOP="${HOP:-110}" BALANCED="${BALANCED:-70}"
STEPS="${STEPS:-$((HOP + BALANCED))}" SEED="${SEED:-58}"
HL=hl-letters MIX=hls-letters  # session 57's first run's folders
[[ $SEED == 58 ]] || HL=hl-seed$SEED-letters MIX=$OUT-letters
[[ -s $D/$HL/train.jsonl ]] || python3 tools/make_dataset.py --out "$D/$HL" \
  --seed "$SEED" --train "$HOP" --dev 0 --test 0 --min_tokens 8000 --max_tokens 32000 \
  --min_cities 12 --kinds two_hop,two_hop,one_hop,yes_no,unanswerable \
  --unanswerable attributes --names letters
python3 tools/mix_sets.py $D "$MIX/train.jsonl" --seed 26 "$HL/train:hl-:0:$HOP" \
  "bls-letters/train:bls-:0:$BALANCED"
# shellcheck source=bench/results/minilm_eval/realtext/cf-drill-first/long_stage.sh
source "$HERE/long_stage.sh"
train_long_stage "$D/$MIX/train.jsonl" "$STEPS" 12 90
[[ -z "${TRAIN_ONLY:-}" ]] || exit 0
SERVED_ONLY=1 "$HERE/score_model.sh" "$NAME" "$W/$OUT"
# shellcheck source=bench/results/minilm_eval/realtext/cf-drill-first/forced.sh
source "$HERE/forced.sh"
forced "$NAME" "$W/$OUT"
cp "$W/eval/mid/$NAME.txt" "$HERE/$NAME-mid-forced.txt"
cp "$W/eval/long100/$NAME.txt" "$HERE/$NAME-long100-forced.txt"
"$HERE/score_model.sh" "$NAME" "$W/$OUT"
