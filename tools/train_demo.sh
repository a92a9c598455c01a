#!/usr/bin/env bash
# Reproduces the demo model's training: the synthetic data (tools/make_dataset.py), one tokenizer,
# and three variants trained on the same budget, one thread each, in parallel:
#   cluster_former  layers SSCS (the cluster layer in the upper half)
#   sliding         layers SSSS (sliding windows only; otherwise identical)
#   etc             layers EEEE (global-local attention, radius 32)
# All: d 128, 4 heads, FFN 512, exact-match input feature, AdamW, curriculum over three stages of
# document length (s1 220-600, s2 600-2,000, s3 2,000-4,000 target tokens; dev/test 2,000-16,000).
# Re-running resumes each variant from WORK/<variant> (trainer_state.json). (The first round's
# checkpoints were in models/checkpoints/<variant> until session 72; git history holds them.)
# Usage: tools/train_demo.sh [WORK]   (default build/demo-train; env STEPS, BUILD, VARIANTS)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
WORK="${1:-$BUILD/demo-train}"
STEPS="${STEPS:-4000}"
VARIANTS="${VARIANTS:-cluster_former sliding etc}"
DATA="$WORK/data"
mkdir -p "$DATA"

make_split() {  # name seed train dev test min max
  [[ -s "$DATA/$1/dev.jsonl" ]] && return
  python3 "$ROOT/tools/make_dataset.py" --out "$DATA/$1" --seed "$2" --train "$3" --dev "$4" \
    --test "$5" --min_tokens "$6" --max_tokens "$7"
}
make_split long 1 0 200 200 2000 16000
make_split s1 11 6000 100 0 220 600
make_split s2 12 4000 100 0 600 2000
make_split s3 13 2000 100 0 2000 4000

common_init=(--hidden_size 128 --num_heads 4 --intermediate_size 512 --vocab_size 8000
             --corpus "$DATA/s1/corpus.txt" --exact_match --seed 1)
init() {  # variant, then longqa-random-model flags
  local v="$1"; shift
  [[ -s "$WORK/init-$v/model.safetensors" ]] && return
  "$BUILD/tools/longqa-random-model" --out "$WORK/init-$v" "${common_init[@]}" "$@"
}
init cluster_former --layers SSCS --window_tokens 128 --stride_tokens 96 --clusters 32
init sliding --layers SSSS --window_tokens 128 --stride_tokens 96
init etc --architecture etc --layers EEEE --etc_radius 32

for v in $VARIANTS; do
  "$BUILD/train/longqa-train" --init_model "$WORK/init-$v" --out "$WORK/$v" \
    --stages "$DATA/s1/train.jsonl,$DATA/s2/train.jsonl,$DATA/s3/train.jsonl" \
    --stage_dev "$DATA/s1/dev.jsonl,$DATA/s2/dev.jsonl,$DATA/s3/dev.jsonl" \
    --long_dev "$DATA/long/dev.jsonl" --steps "$STEPS" --batch_tokens 4096 --lr 1e-3 \
    --warmup 200 --advance_accuracy 0.7 --advance_window 400 --min_stage_steps 300 \
    --max_stage_steps 1200 --centroid_every 100 --eval_every 1000 \
    --eval_examples 60 --save_every 100 --threads 1 --seed 1 >> "$WORK/$v.log" 2>&1 &
done
wait
echo "trained: $VARIANTS (logs in $WORK/<variant>.log)"
