#!/usr/bin/env bash
# Session 65: the Cluster-Former on generated 8k-32k documents whose unanswerable questions ask
# each attribute as often as the one-hop questions do (make_dataset.py --unanswerable matched;
# one-hop and unanswerable questions only, two to one), every answer forced (null_scores.py
# collect), then attribute_nulls.py at each model's own threshold: does a model null a question by
# reading the document or by the attribute it asks? The test split's unanswerable questions are
# founding, occupation and "established" questions only (no birthplace or year: every person has
# those), so it cannot say.
# Usage: matched-split.sh NAME=CHECKPOINT@THRESHOLD...   (env W: default build/matched; N: the
# documents, default 100; ANSWER_SCORE: the served score, default type+long, the Cluster-Former's;
# models/demo's is type; REPORT: default matched-split.md). Writes NAME-matched-scores.json and
# REPORT beside this script.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../../.."
W="${W:-build/matched}"
gold=$W/data/long-matched/test.jsonl
[[ -s $gold ]] || python3 tools/make_dataset.py --out "$W/data/long-matched" --seed 21 \
  --train 0 --dev 0 --test "${N:-100}" --min_tokens 8000 --max_tokens 32000 \
  --kinds one_hop,one_hop,unanswerable --unanswerable matched
# shellcheck source=bench/results/minilm_eval/realtext/cf-drill-first/forced_scores.sh
source "$HERE/forced_scores.sh"
reports=()
for arg in "$@"; do
  name="${arg%%=*}" rest="${arg#*=}"
  checkpoint="${rest%@*}" threshold="${rest##*@}"
  folder="$W/tl-$name"  # score_model.sh's name
  [[ -s $folder/model.safetensors ]] || .venv/bin/python tools/ship_model.py "$checkpoint" \
    "$folder" --dtype f32 --answer_score="${ANSWER_SCORE:-type+long}"
  scores=$W/$name-matched-scores.json
  [[ -s $scores ]] || forced_scores "$folder" "$gold" "$scores" "$W/$name-matched.server.log"
  cp "$scores" "$HERE/$name-matched-scores.json"
  reports+=("$name=$HERE/$name-matched-scores.json@$threshold")
done
python3 "$HERE/attribute_nulls.py" "$gold" "${reports[@]}" | tee "$HERE/${REPORT:-matched-split.md}"
