#!/usr/bin/env bash
# Session 61: the real-English round with generated 8k-32k documents in its mix. Session 60's round
# (replay-stage.sh) lifted the long generated documents at 900 steps and lost them again by 1,800
# (replay1800): this round keeps them in view. The mix: SHORT rows of round 6's mix (mix4, made
# as realtext.sh makes it) and LONG generated documents of 8k-32k tokens (tools/make_dataset.py,
# the long test split's settings, another seed: its train split, so no held-out names or
# phrasings), shuffled; the round's settings otherwise (tools/train_minilm_tables.sh TRAIN_ONLY,
# MIX). Then scored as every Cluster-Former since session 54 (score_model.sh, W's long100.jsonl
# and data/long) and on real English beside models/demo (realtext.sh, in RT's folder).
# Env START (default the kept model), W (default build/mixed-round; W/data is made or linked by
# the caller: it needs mix4, long/ and calib5), NAME (default mixed), SHORT (1850), LONG (60),
# STEPS (900), SEED (make_dataset.py's, 81), MIX_SEED (mix_sets.py's shuffle, 27: session 63's
# repeat changed only this), RT (realtext.sh's W, default W), THREADS (2), DEMO (realtext.sh's),
# UNANSWERABLE (make_dataset.py's --unanswerable for the long documents, default questions) and
# SHORT_MIX (the folder in W/data the short rows come from, default mix4): session 65's
# matched-round.sh set both; PHRASINGS (make_dataset.py's --phrasings for the long documents,
# default seen; session 66), NAMES (its --names, default syllables), SIMILAR (its --similar_names,
# default 0; session 67); TRAIN_ONLY=1: stop once trained (rebuild.sh's stage 6); DATA_ONLY=1:
# stop once the mix is made (session 72: etc-from-cf/long-round.sh trains on it); SHORT_FROM (the
# first SHORT_MIX row taken, default 0; session 74: a round on rows no earlier round saw).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../../.."
export W="${W:-build/mixed-round}"  # score_model.sh reads it too
START="${START:-models/checkpoints/cluster_former_minilm}" NAME="${NAME:-mixed}"
SHORT="${SHORT:-1850}" LONG="${LONG:-60}" SEED="${SEED:-81}"
MIX_SEED="${MIX_SEED:-27}" UNANSWERABLE="${UNANSWERABLE:-questions}" SHORT_MIX="${SHORT_MIX:-mix4}"
PHRASINGS="${PHRASINGS:-seen}" NAMES="${NAMES:-syllables}" SIMILAR="${SIMILAR:-0}"
SHORT_FROM="${SHORT_FROM:-0}"
D=$W/data mix=mix-long$LONG-seed$SEED long=long$LONG-seed$SEED
[[ $UNANSWERABLE == questions ]] || { long+=-$UNANSWERABLE; mix+=-$UNANSWERABLE; }
[[ $PHRASINGS == seen ]] || { long+=-$PHRASINGS; mix+=-$PHRASINGS; }
[[ $NAMES == syllables ]] || { long+=-$NAMES; mix+=-$NAMES; }
[[ $SIMILAR == 0 ]] || { long+=-similar$SIMILAR; mix+=-similar$SIMILAR; }
[[ $SHORT_MIX == mix4 ]] || mix+=-$SHORT_MIX
[[ $MIX_SEED == 27 ]] || mix+=-mix$MIX_SEED
[[ $SHORT_FROM == 0 ]] || mix+=-from$SHORT_FROM
[[ -s $D/$long/train.jsonl ]] ||
  python3 tools/make_dataset.py --out "$D/$long" --seed "$SEED" --train "$LONG" \
    --dev 0 --test 0 --min_tokens 8000 --max_tokens 32000 --unanswerable "$UNANSWERABLE" \
    --phrasings "$PHRASINGS" --names "$NAMES" --similar_names "$SIMILAR"
python3 tools/mix_sets.py "$D" "$mix/train.jsonl" --seed "$MIX_SEED" \
  "$SHORT_MIX/train:r6-:$SHORT_FROM:$((SHORT_FROM + SHORT))" "$long/train:long-:0:$LONG"
cp "$D/mix4/dev.jsonl" "$D/$mix/dev.jsonl"
[[ -z ${DATA_ONLY:-} ]] || exit 0
# shellcheck source=bench/results/minilm_eval/realtext/cf-drill-first/round6.sh
source "$HERE/round6.sh"
env "${ROUND6[@]}" TRAIN_ONLY=1 MIX="$mix" STEPS="${STEPS:-900}" tools/train_minilm_tables.sh \
  "$START" "$W"
cp "$W/round.log" "$HERE/$NAME-train.log"
[[ -z ${TRAIN_ONLY:-} ]] || exit 0
[[ -s $W/long100.jsonl ]] || head -100 "$D/long/dev.jsonl" > "$W/long100.jsonl"
"$HERE/score_model.sh" "$NAME" "$W/round"
round="$W/round"
W="${RT:-$W}" MODEL="$round" NAME="$NAME" "$HERE/realtext.sh"
