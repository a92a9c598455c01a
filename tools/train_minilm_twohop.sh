#!/usr/bin/env bash
# Continues a trained variant on a two-hop-heavy mixture: half of the questions two-hop (the
# paragraph saying P was born in C sits at the other end of the document from the one saying C
# lies in K, the long answer), the other half one-hop, yes/no and unanswerable so those are kept.
# Why: in the curriculum of tools/train_minilm.sh one question in five is two-hop and no variant
# learned them (8k-32k test long F1 0.00-0.05, docs/demo-model.md); an ETC model's question
# tokens are global and see the whole document, so the route it needs (question -> birth
# paragraph -> city's country paragraph) does not depend on the distance and can be learned on
# short documents first (measured, session 21: learned there, 0.42-0.58 long right on 220-600
# tokens, but not at the test's 8k-32k after 400 long steps: docs/demo-model.md). Stages of
# 220-600, 600-2,000 and 4,000-16,000 target tokens; each short one ends after SHORT_STEPS
# (default a third of the steps) or earlier at 80% training accuracy, the long one takes the rest.
# Starts from WORK/<variant> (its weights and config: a fresh optimizer and schedule), writes
# WORK/<variant>-twohop, and the model as each short stage ended in WORK/<variant>-twohop/stage-0
# and stage-1 (session 21's 4k-16k stage lost the two-hop answers its 600-2,000 stage had);
# re-running resumes it.
# Usage: tools/train_minilm_twohop.sh [VARIANT]   (default etc; env WORK, BUILD, STEPS (default
# 1500), SHORT_STEPS, THREADS, DEVICE: cpu or cuda, PYTHON, TRAIN_FLAGS: more longqa-train flags)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
WORK="${WORK:-$BUILD/minilm-train}"
VARIANT="${1:-etc}"
STEPS="${STEPS:-1500}"
DATA="$WORK/data"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
KINDS="two_hop,two_hop,two_hop,one_hop,yes_no,unanswerable"
make_split() {  # name seed train min max
  [[ -s "$DATA/$1/dev.jsonl" ]] && return
  "$PYTHON" "$ROOT/tools/make_dataset.py" --out "$DATA/$1" --seed "$2" --train "$3" --dev 100 \
    --test 0 --min_tokens "$4" --max_tokens "$5" --kinds "$KINDS"
}
make_split th1 41 4000 220 600
make_split th2 42 2000 600 2000
make_split th4 44 1500 4000 16000
[[ -s "$WORK/$VARIANT/model.safetensors" ]] || { echo "no trained $WORK/$VARIANT" >&2; exit 1; }
stage_steps="${SHORT_STEPS:-$((STEPS / 3))}"
# shellcheck disable=SC2086  # TRAIN_FLAGS: several flags
exec stdbuf -oL "$BUILD/train/longqa-train" --init_model "$WORK/$VARIANT" \
  --out "$WORK/$VARIANT-twohop" \
  --stages "$DATA/th1/train.jsonl,$DATA/th2/train.jsonl,$DATA/th4/train.jsonl" \
  --stage_dev "$DATA/th1/dev.jsonl,$DATA/th2/dev.jsonl,$DATA/th4/dev.jsonl" \
  --long_dev "$DATA/mid/dev.jsonl" --steps "$STEPS" --batch_tokens 2048 --max_batch 8 --lr 5e-5 \
  --warmup 50 --advance_accuracy 0.8 --advance_window 200 --min_stage_steps 100 \
  --max_stage_steps "$stage_steps" --centroid_every 100 --eval_every 250 \
  --eval_examples 40 --save_every 50 --keep_stage_models --threads "${THREADS:-1}" \
  --device "${DEVICE:-cpu}" --seed 3 \
  ${TRAIN_FLAGS:-} >> "$WORK/$VARIANT-twohop.log" 2>&1
