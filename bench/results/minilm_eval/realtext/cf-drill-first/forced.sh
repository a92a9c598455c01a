# shellcheck shell=bash
# Sourced by run.sh, hop-long-stage.sh, balanced.sh and company_margins.sh: a model served with
# every answer forced (ship_model.py --null_threshold=-1000) and scored by tools/eval_demo.sh.
# Reads the caller's W.
score() {  # gold set, output folder, name: the folder W/forced/<name>, every answer forced
  [[ -s "$2/$3.txt" ]] && return  # scored in an earlier run (eval_demo.sh names a finished report)
  THREADS=2 EVAL_FLAGS="--timeout_s=900" tools/eval_demo.sh "$1" "$2" "$W/forced/$3"
}
ship_forced() {  # name, model folder: shipped to W/forced/<name> with every answer forced
  [[ -s "$W/forced/$1"/model.safetensors ]] || .venv/bin/python tools/ship_model.py "$2" \
    "$W/forced/$1" --dtype f32 --answer_score=type+long --null_threshold=-1000
}
forced() {  # name, model folder: ship_forced, then scored on the 2k-8k and 8k-32k dev sets
  ship_forced "$1" "$2"
  score "$W/data/mid/dev.jsonl" "$W/eval/mid" "$1"
  score "$W/long100.jsonl" "$W/eval/long100" "$1"
}
