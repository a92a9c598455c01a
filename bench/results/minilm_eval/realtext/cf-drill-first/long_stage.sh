# shellcheck shell=bash
# Sourced by balanced-long-stage.sh and hop-long-stage.sh: the long stage's training run, session
# 51's settings (lr 3e-5, 20 warm-up steps, batches of 2,048 tokens, the 4k-16k and 2k-8k dev sets
# as monitors, centroids refreshed every 100 steps, 2 threads). Reads the caller's W, D, START,
# OUT, NAME and HERE, and env THREADS, DEVICE (cpu or cuda: gpu_chain.sh) and TRAIN_FLAGS (more
# longqa-train flags, e.g. --time_limit_s); the log goes to W/OUT.log (appended: a rerun resumes)
# and beside the scripts as NAME-train.log.
# shellcheck disable=SC2086  # TRAIN_FLAGS: several flags
train_long_stage() {  # stage file, steps, seed, steps between dev evaluations
  stdbuf -oL build/train/longqa-train --init_model "$START" --out "$W/$OUT" --stages "$1" \
    --stage_dev "$D/s4/dev.jsonl" --long_dev "$D/mid/dev.jsonl" --steps "$2" --lr 3e-5 \
    --warmup 20 --seed "$3" --eval_every "$4" --batch_tokens 2048 --max_batch 8 \
    --eval_examples 20 --centroid_every 100 --save_every 25 --threads "${THREADS:-2}" \
    --device "${DEVICE:-cpu}" ${TRAIN_FLAGS:-} 2>&1 |
    tee -a "$W/$OUT.log"
  cp "$W/$OUT.log" "$HERE/$NAME-train.log"
}
