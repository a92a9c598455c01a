#!/usr/bin/env bash
# Session 65: the Cluster-Former's one-hop nulls follow the attribute asked (founding questions
# nulled 2-5 of 9 in every round, birthplaces and years 0-4 of 47), as the generator's default
# unanswerable draw predicts: most people found nothing, so about three founding questions in four
# have no answer, and no birthplace or year question has none. This round is mixed-round.sh's
# mixed120 (round 6's mix, 1,850 short rows, and 120 generated 8k-32k documents, 900 steps from
# the kept model) with every generated row made by `make_dataset.py --unanswerable matched`:
# unanswerable questions ask each attribute as often as one-hop ones do. The short generated rows
# are mix4's s1 and s2 rows (seeds 31 and 32, the same row ranges) made again in that mode, mixed
# as mix4 is (same seed and counts): only the generated rows differ from mix4.
# Session 66: PHRASINGS=wide makes every generated row with `--phrasings wide` as well (train
# questions also in a third list of phrasings, none of them held out; the round matchedwide120).
# NAMES=letters (session 66) makes the generated rows' names from letters (make_dataset.py --names).
# SIMILAR=0.5 (session 67): half the people of a generated row's document named after another one
# there (make_dataset.py --similar_names: three of four name pieces shared).
# Usage: matched-round.sh   (env W: default build/matched, W/data as realtext.sh makes it
# (round 6's DATA_ONLY); NAME (matched120); PHRASINGS (seen); NAMES (syllables); SIMILAR (0);
# MIX_SEED; THREADS;
# RT; DEMO: as mixed-round.sh)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../../.."
export W="${W:-build/matched}"
D=$W/data
PHRASINGS="${PHRASINGS:-seen}" NAMES="${NAMES:-syllables}" SIMILAR="${SIMILAR:-0}" suffix=""
[[ $PHRASINGS == seen ]] || suffix=-$PHRASINGS
[[ $NAMES == syllables ]] || suffix+=-$NAMES
[[ $SIMILAR == 0 ]] || suffix+=-similar$SIMILAR
split() {  # name seed train min max: tools/train_minilm.sh's make_split, matched
  [[ -s $D/$1/train.jsonl ]] ||
    python3 tools/make_dataset.py --out "$D/$1" --seed "$2" --train "$3" --dev 0 --test 0 \
      --min_tokens "$4" --max_tokens "$5" --unanswerable matched --phrasings "$PHRASINGS" \
      --names "$NAMES" --similar_names "$SIMILAR"
}
split "s1-matched$suffix" 31 6000 220 600
split "s2-matched$suffix" 32 4000 600 2000
# mix4's recipe (tools/train_minilm_tables.sh) with the generated rows swapped
[[ -s $D/mix4m$suffix/train.jsonl ]] ||
  python3 tools/mix_sets.py "$D" "mix4m$suffix/train.jsonl" --seed 14 prose/train:prose-:0: \
    tables/train:table-:0: man/train:man-:6800:7600 man-md/train:md-:5200:6000 \
    "s1-matched$suffix/train:s1-:4800:6000" "s2-matched$suffix/train:s2-:3200:4000"
LONG=120 UNANSWERABLE=matched SHORT_MIX="mix4m$suffix" PHRASINGS="$PHRASINGS" NAMES="$NAMES" \
  SIMILAR="$SIMILAR" \
  NAME="${NAME:-matched120}" "$HERE/mixed-round.sh"
