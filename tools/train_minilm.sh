#!/usr/bin/env bash
# Fine-tunes the shipped English model's three variants from all-MiniLM-L6-v2 (BERT, 6 layers,
# d 384; third_party/minilm, installed by deploy/install-deps.sh), same data, same budget:
#   sliding         layers SSSSSS (sliding windows only)
#   cluster_former  layers SSCSSC (two cluster layers, 16 centroids, Algorithm 1 refreshed)
#   etc             layers EEEEEE (global-local attention lifted from the same weights; positions
#                   numbered through the document, one segment token: docs/demo-model.md)
# Windows of 256 tokens, stride 224, questions up to 32 tokens. Data: tools/make_dataset.py in
# three curriculum stages of document length (s1 220-600, s2 600-2,000, s3 2,000-4,000 target
# tokens), a periodic dev set of 2,000-8,000 and the dev/test sets of 8,000-32,000 (test: held-out
# names and phrasings). Re-running resumes each variant from WORK/<variant>.
# Usage: tools/train_minilm.sh [WORK]  (default build/minilm-train; env STEPS, BUILD, VARIANTS,
# THREADS, DEVICE: cpu or cuda, PYTHON: for the data and the import, default the test venv's,
# DATA_ONLY: make the data sets and stop, INIT_ONLY: make the initial folders and stop (no data),
# MINILM: the encoder to lift (default third_party/minilm), ETC_FLAGS: the ETC lift's import_hf.py
# flags, default --etc_max_segments 1 (session 21's per-paragraph run: --etc_max_segments 256
# --etc_hard_g2l_mask), TRAIN_FLAGS: more longqa-train flags, e.g. --time_limit_s, CLUSTERS:
# centroids a cluster layer, default 16)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
WORK="${1:-$BUILD/minilm-train}"
STEPS="${STEPS:-2000}"
THREADS="${THREADS:-1}"
VARIANTS="${VARIANTS:-sliding cluster_former etc}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
MINILM="${MINILM:-$ROOT/third_party/minilm}"
DATA="$WORK/data"
mkdir -p "$DATA"

make_split() {  # name seed train dev test min max
  [[ -s "$DATA/$1/dev.jsonl" ]] && return
  "$PYTHON" "$ROOT/tools/make_dataset.py" --out "$DATA/$1" --seed "$2" --train "$3" --dev "$4" \
    --test "$5" --min_tokens "$6" --max_tokens "$7"
}
if [[ -z "${INIT_ONLY:-}" ]]; then
  make_split long 21 0 200 200 8000 32000
  make_split mid 22 0 100 0 2000 8000
  make_split s1 31 6000 100 0 220 600
  make_split s2 32 4000 100 0 600 2000
  make_split s3 33 2000 100 0 2000 4000
fi
[[ -z "${DATA_ONLY:-}" ]] || exit 0

common=(--window_tokens 256 --stride_tokens 224 --max_question_tokens 32)
init() {  # variant, then import_hf.py flags: only for the variants trained
  local v="$1"; shift
  [[ " $VARIANTS " == *" $v "* ]] || return 0
  [[ -s "$WORK/init-$v/model.safetensors" ]] && return
  "$PYTHON" "$ROOT/tools/import_hf.py" "$MINILM" "$WORK/init-$v" "$@"
}
init sliding --layers SSSSSS "${common[@]}"
init cluster_former --layers SSCSSC --clusters "${CLUSTERS:-16}" "${common[@]}"
# shellcheck disable=SC2086  # ETC_FLAGS: several flags
init etc --architecture etc --max_question_tokens 32 --etc_positions document \
  ${ETC_FLAGS:---etc_max_segments 1}
[[ -z "${INIT_ONLY:-}" ]] || exit 0

for v in $VARIANTS; do
  # shellcheck disable=SC2086  # TRAIN_FLAGS: several flags
  stdbuf -oL "$BUILD/train/longqa-train" --init_model "$WORK/init-$v" --out "$WORK/$v" \
    --stages "$DATA/s1/train.jsonl,$DATA/s2/train.jsonl,$DATA/s3/train.jsonl" \
    --stage_dev "$DATA/s1/dev.jsonl,$DATA/s2/dev.jsonl,$DATA/s3/dev.jsonl" \
    --long_dev "$DATA/mid/dev.jsonl" --steps "$STEPS" --batch_tokens 2048 --max_batch 8 \
    --lr 1e-4 --warmup 100 --advance_accuracy 0.8 --advance_window 300 --min_stage_steps 200 \
    --max_stage_steps 700 --centroid_every 100 --eval_every 250 \
    --eval_examples 40 --save_every 50 --threads "$THREADS" --device "${DEVICE:-cpu}" --seed 1 \
    ${TRAIN_FLAGS:-} >> "$WORK/$v.log" 2>&1 &
done
wait
echo "trained: $VARIANTS (logs in $WORK/<variant>.log)"
