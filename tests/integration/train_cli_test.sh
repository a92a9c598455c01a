#!/usr/bin/env bash
# longqa-train end to end on a tiny Cluster-Former: the curriculum moves to the next stage, the
# centroids are refreshed from the memory bank (a sample of 100 rows from each pass) and refitted
# after the last step, dev scores are printed, a checkpoint is written
# (and, --keep_stage_models, the model at the end of a stage), and a second run resumes from it
# (step count, stage) instead of starting over; --device names where it trains, and a device
# that is not there is refused.
# Usage: train_cli_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src="$1"; build="$2"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; cat "$work/log" || true; exit 1; }

python3 "$src/tools/make_dataset.py" --out "$work/data" --seed 5 --train 16 --dev 4 --test 0 \
  --min_tokens 220 --max_tokens 300 >/dev/null
"$build/tools/longqa-random-model" --out "$work/init" --layers SCS --hidden_size 32 \
  --num_heads 2 --intermediate_size 64 --window_tokens 48 --stride_tokens 32 --clusters 4 \
  --vocab_size 300 --corpus "$work/data/corpus.txt" --exact_match >/dev/null
train=("$build/train/longqa-train" --init_model "$work/init" --out "$work/ckpt"
       --stages "$work/data/train.jsonl,$work/data/train.jsonl" --stage_dev "$work/data/dev.jsonl"
       --batch_tokens 700 --min_stage_steps 1 --max_stage_steps 3 --centroid_every 2
       --memory 2000 --memory_per_pass 100 --final_centroids 5 --eval_every 4 --eval_examples 4 --save_every 2 --log_every 1 --threads 1)

"${train[@]}" --steps 4 --keep_stage_models >"$work/log" 2>&1 || fail "first run exited $?"
grep -q "^starting .* on cpu; stage 0, step 0" "$work/log" || fail "no start line naming the device"
grep -q "stage 0 ends (max_stage_steps) at step 3" "$work/log" || fail "stage did not advance"
grep -q "^stage 1: " "$work/log" || fail "stage 1 not loaded"
# 4 clusters need 200 rows: two passes of 100 sampled rows; the step-2 refresh adds two more.
grep -q "^initial centroids from 200 rows" "$work/log" || fail "initial centroids not from 200 rows"
grep -q "centroids refreshed from 400 rows" "$work/log" || fail "centroids not refreshed from 400 rows"
grep -q "dev  (stage 0) all" "$work/log" || fail "no dev scores"
grep -q '"step": 4' "$work/ckpt/trainer_state.json" || fail "state not at step 4"
grep -q '"stage": 1' "$work/ckpt/trainer_state.json" || fail "state not in stage 1"
for f in config.json model.safetensors spm.model optimizer.safetensors; do
  [ -s "$work/ckpt/$f" ] || fail "checkpoint lacks $f"
done
# --keep_stage_models: stage 0's model as it was when the stage ended (step 3), servable files
# only; stage 1 is the last stage, whose model is the checkpoint itself.
grep -q "stage 0 model kept in $work/ckpt/stage-0 (step 3)" "$work/log" || fail "no stage-0 line"
for f in config.json model.safetensors spm.model; do
  [ -s "$work/ckpt/stage-0/$f" ] || fail "stage-0 lacks $f"
done
[ ! -e "$work/ckpt/stage-0/optimizer.safetensors" ] || fail "stage-0 has an optimizer state"
[ ! -e "$work/ckpt/stage-0/trainer_state.json" ] || fail "stage-0 looks resumable"
[ ! -e "$work/ckpt/stage-1" ] || fail "the unfinished last stage was kept"
! cmp -s "$work/ckpt/stage-0/model.safetensors" "$work/ckpt/model.safetensors" \
  || fail "stage-0 holds the step-4 weights"
# After the last step the centroids are refitted in layer order on the final weights from the
# last stage's first 5 examples: what longqa-centroids writes from the same weights and examples.
grep -q "^final centroids from 5 examples of stage 1, in layer order" "$work/log" \
  || fail "no final centroids line"
cp -r "$work/ckpt" "$work/refit"
head -n 5 "$work/data/train.jsonl" >"$work/first5.jsonl"
"$build/tools/longqa-centroids" --model_dir "$work/refit" --corpus "$work/first5.jsonl" \
  --memory 2000 --threads 1 >/dev/null 2>&1 || fail "longqa-centroids exited $?"
# Every other tensor byte for byte; the centroids within float rounding (the two processes' bank
# rows differ in the last bits).
python3 - "$work/ckpt/model.safetensors" "$work/refit/model.safetensors" <<'PY' \
  || fail "the checkpoint's centroids are not longqa-centroids' on its final weights"
import array, json, struct, sys
def tensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    return {k: data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in header.items()}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
assert a.keys() == b.keys()
centroids = [k for k in a if k.endswith(".centroids")]
assert centroids and all(a[k] == b[k] for k in a if k not in centroids)
for k in centroids:
    x, y = array.array("f", a[k]), array.array("f", b[k])
    worst = max(abs(p - q) for p, q in zip(x, y))
    assert len(x) == len(y) and worst <= 1e-6, (k, worst)
PY

"${train[@]}" --steps 6 >"$work/log" 2>&1 || fail "resumed run exited $?"
grep -q "^resuming .*stage 1, step 4" "$work/log" || fail "did not resume from step 4"
grep -q "^step 5 stage 1" "$work/log" || fail "resumed run did not continue at step 5"
grep -q '"step": 6' "$work/ckpt/trainer_state.json" || fail "state not at step 6"

# N, K and I layers serve but do not train: refused with a message naming them, nothing written.
"$build/tools/longqa-random-model" --out "$work/nka" --layers SNSK --hidden_size 32 \
  --num_heads 2 --intermediate_size 64 --window_tokens 48 --stride_tokens 32 --clusters 4 \
  --vocab_size 300 --corpus "$work/data/corpus.txt" >/dev/null
if "$build/train/longqa-train" --init_model "$work/nka" --out "$work/nka-ckpt" \
    --stages "$work/data/train.jsonl" --steps 1 >"$work/log" 2>&1; then
  fail "training an SNSK model did not fail"
fi
grep -q "has N, K or I layers, which longqa serves but does not train" "$work/log" \
  || fail "no message naming the layer types"
# A step interval of 0 (the trainer takes step % interval) is refused with a message naming the
# flag, nothing written; it crashed the trainer with SIGFPE before.
for flag in eval_every save_every centroid_every log_every; do
  if "${train[@]}" --out "$work/zero-ckpt" --steps 1 --"$flag" 0 >"$work/log" 2>&1; then
    fail "--$flag 0 did not fail"
  fi
  grep -qF -- "--$flag must be at least 1 step (got 0)" "$work/log" || fail "no message for --$flag 0"
  [ ! -e "$work/zero-ckpt" ] || fail "--$flag 0 wrote a checkpoint"
done
# --time_limit_s: a clean stop after the step that passes it, with a checkpoint to resume from.
"${train[@]}" --steps 100 --time_limit_s 0.001 >"$work/log" 2>&1 || fail "time-limited run exited $?"
grep -q "time limit 0 s reached at step 7" "$work/log" || fail "no time-limit stop at step 7"
grep -q '"step": 7' "$work/ckpt/trainer_state.json" || fail "no checkpoint at step 7"
# --stop_after: a clean stop once that step is done, on --steps' learning-rate schedule (constant,
# then decaying over the last fifth): steps 1-10 log the loss and learning rate of a 20-step run's
# first ten (a 10-step run decays at its steps 9-10), with a checkpoint and dev scores at step 10.
sched=(--warmup 1 --lr 1e-3 --eval_every 100 --save_every 100)
"${train[@]}" "${sched[@]}" --out "$work/full20" --steps 20 >"$work/full20.log" 2>&1 \
  || fail "20-step run exited $?"
"${train[@]}" "${sched[@]}" --out "$work/stop10" --steps 20 --stop_after 10 >"$work/log" 2>&1 \
  || fail "--stop_after run exited $?"
grep -q "^stopped after step 10 of 20 (--stop_after); checkpoint in $work/stop10" "$work/log" \
  || fail "no --stop_after line"
grep -q '"step": 10' "$work/stop10/trainer_state.json" || fail "no checkpoint at step 10"
grep -q "dev  (stage" "$work/log" || fail "no dev scores at the stop"
! grep -q "^step 11 " "$work/log" || fail "--stop_after ran past step 10"
first10() { grep -E "^step ([1-9]|10) " "$1" | sed 's/  |g|.*//'; }
[ "$(first10 "$work/log" | wc -l)" = 10 ] || fail "steps 1-10 not logged"
[ "$(first10 "$work/log")" = "$(first10 "$work/full20.log")" ] \
  || fail "steps 1-10 differ from the 20-step run's: $(first10 "$work/full20.log")"
"${train[@]}" "${sched[@]}" --out "$work/full10" --steps 10 >"$work/full10.log" 2>&1 \
  || fail "10-step run exited $?"
[ "$(first10 "$work/full10.log" | tail -1)" != "$(first10 "$work/log" | tail -1)" ] \
  || fail "a 10-step run's step 10 equals the stopped run's: the check cannot tell the schedules apart"

# A device that is not there is refused before anything is written: a bad name, and CUDA where
# none is available (this test runs on machines without a GPU).
for device in tpu cuda; do
  if "${train[@]}" --out "$work/dev-ckpt" --steps 1 --device "$device" >"$work/log" 2>&1; then
    fail "--device $device did not fail"
  fi
  [ ! -e "$work/dev-ckpt" ] || fail "--device $device wrote a checkpoint"
done
grep -qF -- "--device: bad device 'tpu'" <("${train[@]}" --out "$work/dev-ckpt" --device tpu 2>&1 || true) \
  || fail "no message naming the bad device"
grep -qF -- "--device: device cuda requested but no CUDA device is available" "$work/log" \
  || fail "no message saying CUDA is missing"
echo "PASS"
