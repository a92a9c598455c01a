#!/usr/bin/env bash
# Teaches a trained Cluster-Former variant yes/no (docs/demo-model.md, "Yes/no"): its answer
# type switched to read the long-answer paragraph (config answer_type_pooling "paragraph"), then
#   1. yes/no questions asked of their answering paragraph alone (from s1, 120 steps),
#   2. the same questions in their whole s1 documents (220-600 tokens, 200 steps),
#   3. every kind again on s2 then s3 documents (600-4,000 tokens, 200 steps each), so the other
#      answer types are learned from the paragraph state too.
# Each stage starts from the previous one's weights (fresh optimizer); re-running skips the
# stages that finished. Writes WORK/<variant>-yesno (and WORK/<variant>-yesno-1, -2 on the way).
# Usage: tools/train_minilm_yesno.sh [VARIANT]   (default cluster_former; env WORK, BUILD, THREADS,
# DEVICE: cpu or cuda, PYTHON, TRAIN_FLAGS: more longqa-train flags)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
WORK="${WORK:-$BUILD/minilm-train}"
VARIANT="${1:-cluster_former}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
DATA="$WORK/data"
OUT="$WORK/$VARIANT-yesno"
[[ -s "$WORK/$VARIANT/model.safetensors" ]] || { echo "no trained $WORK/$VARIANT" >&2; exit 1; }
[[ -s "$DATA/s1/train.jsonl" && -s "$DATA/s3/dev.jsonl" ]] ||
  { echo "no s1-s3 data in $DATA: run tools/train_minilm.sh's data step" >&2; exit 1; }

# The yes/no questions of s1: in their documents (yn) and with the answering paragraph alone (yn1).
if [[ ! -s "$DATA/yn1/dev.jsonl" ]]; then
  "$PYTHON" - "$DATA" <<'PY'
import json, os, sys
data = sys.argv[1]
for name in ("yn", "yn1"):
    os.makedirs(os.path.join(data, name), exist_ok=True)
for split in ("train", "dev"):
    with open(f"{data}/yn/{split}.jsonl", "w") as whole, open(f"{data}/yn1/{split}.jsonl", "w") as alone:
        for line in open(f"{data}/s1/{split}.jsonl"):
            g = json.loads(line)
            if g["kind"] != "yes_no":
                continue
            whole.write(line)
            la = g["long_answer"]
            text = "\n\n".join(g["paragraphs"]).encode()[la["start_byte"]:la["end_byte"]].decode()
            g["paragraphs"] = [text]
            g["long_answer"] = {"start_byte": 0, "end_byte": len(text.encode())}
            alone.write(json.dumps(g) + "\n")
PY
fi
if [[ ! -s "$OUT-0/config.json" ]]; then
  rm -rf "$OUT-0" && cp -r "$WORK/$VARIANT" "$OUT-0"
  rm -f "$OUT-0/optimizer.safetensors" "$OUT-0/trainer_state.json"
  "$PYTHON" - "$OUT-0/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["answer_type_pooling"] = "paragraph"
json.dump(c, open(sys.argv[1], "w"), indent=2)
PY
fi

stage() {  # from, to, steps, stage files, stage dev files, batch tokens, max batch, lr, then more
  local from="$1" to="$2" steps="$3" stages="$4" devs="$5" tokens="$6" batch="$7" lr="$8"
  shift 8
  [[ -s "$to/trainer_state.json" ]] && grep -q "\"step\": $steps\b" "$to/trainer_state.json" && return
  # shellcheck disable=SC2086  # TRAIN_FLAGS: several flags
  stdbuf -oL "$BUILD/train/longqa-train" --init_model "$from" --out "$to" --stages "$stages" \
    --stage_dev "$devs" --long_dev "$DATA/mid/dev.jsonl" --steps "$steps" --batch_tokens "$tokens" \
    --max_batch "$batch" --lr "$lr" --warmup 10 --centroid_every 100 \
    --eval_every 100 --eval_examples 40 --save_every 50 --threads "${THREADS:-1}" \
    --device "${DEVICE:-cpu}" --seed 5 ${TRAIN_FLAGS:-} "$@" \
    >> "$to.log" 2>&1
}
stage "$OUT-0" "$OUT-1" 120 "$DATA/yn1/train.jsonl" "$DATA/yn1/dev.jsonl" 4096 16 5e-5
stage "$OUT-1" "$OUT-2" 200 "$DATA/yn/train.jsonl" "$DATA/yn/dev.jsonl" 2048 8 5e-5
stage "$OUT-2" "$OUT" 400 "$DATA/s2/train.jsonl,$DATA/s3/train.jsonl" \
  "$DATA/s2/dev.jsonl,$DATA/s3/dev.jsonl" 2048 8 3e-5 --min_stage_steps 200 \
  --max_stage_steps 200
echo "trained $OUT (logs: $OUT-1.log, $OUT-2.log, $OUT.log)"
