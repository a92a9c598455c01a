#!/usr/bin/env bash
# The shipped model's answers at each precision against its fp32 answers (issue 22's bar for a
# precision: the same answer kind and the same spans on >= 99% of dev examples, NQ F1 within 0.5
# point): the 100 examples of the 2k-8k-token dev set that tools/train_minilm.sh makes (seed 22),
# one longqa-server per precision scored by `longqa eval`, compared by precision_agreement.py.
# Usage: bench/precision_answers.sh [BUILD] [OUT]   (env MODEL (models/demo), PRECISIONS
# ("bf16 int8"), THREADS (2))
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
OUT="${2:-$BUILD/precision-answers}"
MODEL="${MODEL:-$ROOT/models/demo}"
PRECISIONS="${PRECISIONS:-bf16 int8}"
export THREADS="${THREADS:-2}" BUILD
DEV="$BUILD/minilm-train/data/mid/dev.jsonl"
[[ -s "$DEV" ]] || "$ROOT/.venv/bin/python" "$ROOT/tools/make_dataset.py" \
  --out "$(dirname "$DEV")" --seed 22 --train 0 --dev 100 --test 0 --min_tokens 2000 \
  --max_tokens 8000
name="$(basename "$MODEL")"
for p in fp32 $PRECISIONS; do
  SERVER_FLAGS="--precision=$p" "$ROOT/tools/eval_demo.sh" "$DEV" "$OUT/$p" "$MODEL" > /dev/null
done
for p in fp32 $PRECISIONS; do
  echo "== $p: $(grep -m1 -i "all" "$OUT/$p/$name.txt" || true)"
  grep -E "^ *(long|short)" "$OUT/$p/$name.txt" | head -2 || true
  [[ "$p" == fp32 ]] || "$ROOT/.venv/bin/python" "$ROOT/bench/precision_agreement.py" \
    "$OUT/fp32/$name.predictions.json" "$OUT/$p/$name.predictions.json"
done
