#!/usr/bin/env bash
# Session 58: sessions 55-57's Cluster-Former chain made again from what the repository holds,
# training only (each stage was scored when it was first trained; its figures are in
# docs/demo-model.md). A new checkout had lost build/cf-r10, and with it every model of the chain:
#   1. the letters drill (letters-drill.sh: models/demo in fp32, SSCSSC, 256 centroids a cluster
#      layer, 1,000 steps of 220-2,000 tokens) -> W/init-k256-drill;
#   2. 150 balanced long steps with letter names (balanced-long-stage.sh) -> W/lds;
#   3. 150 more, resumed from step 150 as session 56 did -> W/lds300;
#   4. the long stage of 12-city 8k-32k documents (hop-long-stage.sh) -> W/hls;
#   5. (session 60) a real-English round: round 6's mix and settings (replay-stage.sh: 900 steps
#      at lr 2e-5; its data in W/realtext/data) -> W/realtext/round;
#   6. (session 66) the matched wide round: matched-round.sh with PHRASINGS=wide (every generated
#      row with --unanswerable matched --phrasings wide); since session 68 also SIMILAR=0.5
#      (--similar_names 0.5) and shuffle seed 27, the round kept then -> W/matched-wide/round.
# Each stage resumes where a stopped run left it and is skipped once finished. The logs land beside
# this script as rebuild-*-train.log (the first runs' logs stay as they were). To keep a stage past
# the checkout (build/ does not survive one), ship it in bf16 into models/checkpoints/ (persist.sh);
# this script then starts after that stage, from its weights in fp32.
# Env W (default build/cf-r10), LAST (the last stage to train, 1-6, default 6).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../../.."
export W="${W:-build/cf-r10}" TRAIN_ONLY=1
LAST="${LAST:-6}"
# shellcheck source=bench/results/minilm_eval/realtext/cf-drill-first/stages.sh
source "$HERE/stages.sh"
P=models/checkpoints/cluster_former_minilm
read -r kept _ < "$P/stage" 2>/dev/null || kept=0
if ((kept > 0)) && [[ ! -s $W/${STAGE_FOLDERS[$kept]}/model.safetensors ]]; then
  mkdir -p "$W"
  .venv/bin/python tools/ship_model.py "$P" "$W/${STAGE_FOLDERS[$kept]}" --dtype f32
fi
((kept >= 1)) || NAME=rebuild-letters-drill bash "$HERE/letters-drill.sh"
((LAST >= 2)) || exit 0
if ((kept >= 1)); then  # the data the skipped stages made: dev sets, test split, balanced mix
  NO_INIT=1 PREPARE_ONLY=1 bash bench/results/minilm_eval/realtext/cf-from-round6/run.sh
  DATA_ONLY=1 NAMES=letters bash "$HERE/balanced-long-stage.sh"
fi
balanced() {  # output folder, steps
  START=$W/init-k256-drill OUT="$1" STEPS="$2" NAME="rebuild-$1" NAMES=letters \
    bash "$HERE/balanced-long-stage.sh"
}
((kept >= 2)) || balanced lds 150
((LAST >= 3)) || exit 0
if ((kept < 3)); then  # a kept stage 3 or later has no W/lds to resume
  [[ -d $W/lds300 ]] || cp -r "$W/lds" "$W/lds300"
  balanced lds300 300
fi
((LAST >= 4)) || exit 0
((kept >= 4)) || START=$W/lds300 OUT=hls NAME=rebuild-hls bash "$HERE/hop-long-stage.sh"
if ((kept < 5)); then
  ((LAST >= 5)) || exit 0
  START=$W/hls bash "$HERE/replay-stage.sh"
  cp "$W/realtext/round.log" "$HERE/rebuild-replay-train.log"
fi
((LAST >= 6 && kept < 6)) || exit 0
# Stage 6 (session 66; session 68's recipe): matched-round.sh's wide round with look-alike names
# (every generated row with --unanswerable matched, --phrasings wide and --similar_names 0.5,
# shuffle seed 27) from stage 5, on stage 5's real-English data.
mkdir -p "$W/matched-wide"
[[ -e $W/matched-wide/data ]] || ln -s ../realtext/data "$W/matched-wide/data"
if [[ ! -s $W/realtext/data/mix4/dev.jsonl ]]; then  # stage 5 kept, so not trained here
  # shellcheck source=bench/results/minilm_eval/realtext/cf-drill-first/round6.sh
  source "$HERE/round6.sh"
  env "${ROUND6[@]}" DATA_ONLY=1 tools/train_minilm_tables.sh models/demo "$W/realtext"
fi
stage5=$W/realtext/round w6=$W/matched-wide
START=$stage5 W=$w6 PHRASINGS=wide SIMILAR=0.5 MIX_SEED=27 NAME=rebuild-matchedwidesimilar \
  TRAIN_ONLY=1 bash "$HERE/matched-round.sh"
