#!/usr/bin/env bash
# Turns trained MiniLM variants (tools/train_minilm.sh) into servable models and scores them:
# the null threshold chosen on the dev set of 8k-32k-token documents, the test split's lengths
# (`longqa eval --calibrate_null`; chosen on 2k-8k documents it nulled twice as many answerable
# 8k-32k questions: docs/demo-model.md), the folder written in fp16 with it
# (tools/ship_model.py), the test split (8k-32k tokens, held-out names and phrasings) per question
# kind, then fp16 checked against fp32 on that dev set.
# Usage: tools/ship_minilm.sh [VARIANT...]   (default: sliding cluster_former etc; env WORK,
# BUILD, THREADS, DEV_EXAMPLES / TEST_EXAMPLES: the first N examples of each split, default all;
# DEV_SPLIT: the dev set's folder under WORK/data, default long (mid: the 2k-8k set);
# CHECKPOINTS: where the trained variants are, default WORK)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export BUILD="${BUILD:-$ROOT/build}"
WORK="${WORK:-$BUILD/minilm-train}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
OUT="$WORK/shipped"
CHECKPOINTS="${CHECKPOINTS:-$WORK}"
mkdir -p "$OUT/eval"
test_gold="$OUT/eval/test.jsonl"
dev_gold="$OUT/eval/dev.jsonl"
head -n "${TEST_EXAMPLES:-1000000}" "$WORK/data/long/test.jsonl" > "$test_gold"
head -n "${DEV_EXAMPLES:-1000000}" "$WORK/data/${DEV_SPLIT:-long}/dev.jsonl" > "$dev_gold"
for v in "${@:-sliding cluster_former etc}"; do
  for variant in $v; do
    # 1. The threshold, on dev, with the fp32 checkpoint.
    EVAL_FLAGS=--calibrate_null "$ROOT/tools/eval_demo.sh" "$dev_gold" \
      "$OUT/eval/dev-fp32" "$CHECKPOINTS/$variant"
    threshold=$("$ROOT/tools/calibrated_threshold.sh" "$OUT/eval/dev-fp32/$variant.txt")
    # 2. The servable folder.
    "$PYTHON" "$ROOT/tools/ship_model.py" "$CHECKPOINTS/$variant" "$OUT/$variant" \
      --null_threshold "$threshold"
    # Text of the generator's world for int8's calibration at load (docs/model-format.md).
    "$PYTHON" "$ROOT/tools/make_calibration_text.py" "$OUT/$variant/calibration.txt"
    # 3. The test split, per kind, with the fp16 folder.
    "$ROOT/tools/eval_demo.sh" "$test_gold" "$OUT/eval/test" "$OUT/$variant"
    "$PYTHON" "$ROOT/tools/demo_report.py" "$test_gold" \
      "$variant=$OUT/eval/test/$variant.predictions.json" | tee "$OUT/eval/test/$variant.kinds.md"
    # 4. fp16 against fp32 on dev, both at the chosen threshold (after the test split, so that a
    # run cut short by a time limit has the test figures).
    "$ROOT/tools/eval_demo.sh" "$dev_gold" "$OUT/eval/dev-fp16" "$OUT/$variant"
    "$PYTHON" - "$OUT/eval/dev-fp32/$variant.predictions.json" \
      "$OUT/eval/dev-fp16/$variant.predictions.json" <<'PY'
import json, sys
a, b = ({p["example_id"]: p for p in json.load(open(f))["predictions"]} for f in sys.argv[1:])
keys = ("long_answer", "short_answers", "yes_no_answer")
changed = [i for i in a if any(a[i][k] != b[i][k] for k in keys)]
print(f"fp16 vs fp32 on dev: {len(changed)} of {len(a)} answers differ {changed[:10]}")
PY
  done
done
