#!/usr/bin/env bash
# Teaches a trained MiniLM model real English (docs/demo-model.md, "Real English from man pages"):
#   1. data: questions about this machine's man pages (tools/make_manpage_dataset.py; pages split
#      by name, so the test pages are never trained on), as `man` prints them (man) and half of
#      them written as Markdown (man-md), each mixed with synthetic s1 and s2 examples of
#      tools/train_minilm.sh's seeds so the generator's skills (yes/no, no answer) stay;
#   2. round 1 from FROM (a model folder, e.g. models/demo of session 20) on the man mix, then
#      round 2 from round 1 on the Markdown mix with synthetic examples round 1 did not see;
#   3. the null threshold on man-page dev (both styles) + 100 8k-32k synthetic dev documents, the
#      bf16 folder (tools/ship_model.py), then the scores per kind (tools/demo_report.py): the
#      man-page test split as printed and as Markdown, the synthetic test split, bench/real_text.
# With PROSE=1, a round 3 from round 2 on README prose (tools/make_prose_dataset.py: this machine's
# /usr/share/doc READMEs and the Python manual's reST sources, python3.11-doc fetched with
# apt-get download into WORK/src) mixed with man-page and synthetic examples rounds 1-2 did not
# see; its threshold, folder (WORK/shipped3) and scores (WORK/eval3, the prose test split too).
# Re-running resumes the training and redoes the scores.
# Usage: tools/train_minilm_realtext.sh FROM [WORK]   (default WORK build/realtext-train; env
# BUILD, THREADS (2), PYTHON, MAN_PAGES: the pages, default man1, man5 and man8, PROSE,
# NULL_BANDS: e.g. 4096, a threshold for man pages and one for the 8k-32k documents of the
# calibration set: `longqa eval --calibrate_null --null_bands`, docs/cli.md; DATA_ONLY: make the
# data sets and mixes and stop)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export BUILD="${BUILD:-$ROOT/build}"
FROM="$1"
WORK="${2:-$BUILD/realtext-train}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
export THREADS="${THREADS:-2}"  # the scoring (eval_demo.sh) too, not only the trainer
DATA="$WORK/data"
mkdir -p "$DATA"

# The generated sets (long, s1, s2 used here) with tools/train_minilm.sh's seeds, in WORK/data.
DATA_ONLY=1 PYTHON="$PYTHON" "$ROOT/tools/train_minilm.sh" "$WORK"
man_split() {  # name seed train dev test markdown-share
  [[ -s "$DATA/$1/dev.jsonl" || -s "$DATA/$1/test.jsonl" ]] && return
  # shellcheck disable=SC2086  # MAN_PAGES: a glob list
  "$PYTHON" "$ROOT/tools/make_manpage_dataset.py" --out "$DATA/$1" --seed "$2" --train "$3" \
    --dev "$4" --test "$5" --markdown "$6" --min_tokens 150 --max_tokens 900 \
    ${MAN_PAGES:-/usr/share/man/man1/*.gz /usr/share/man/man5/*.gz /usr/share/man/man8/*.gz}
}
man_split man 7 8000 200 300 0
man_split man-md 8 6000 200 0 0.5
man_split man-mdtest 9 0 0 300 1
if [[ -n "${PROSE:-}" && ! -s "$DATA/prose-files" ]]; then
  src="$WORK/src/python3.11-doc"
  if [[ ! -d "$src" ]]; then
    mkdir -p "$src"
    (cd "$WORK/src" && apt-get download python3.11-doc)
    dpkg-deb -x "$WORK"/src/python3.11-doc_*.deb "$src"
  fi
  # The prose files, NUL-separated (tools/train_minilm_tables.sh hosts its tables in them).
  { find /usr/share/doc -type f \( -iname "readme*" -o -iname "*.md" -o -iname "*.md.gz" \
      -o -iname "*.rst" -o -iname "*.rst.gz" -o -iname "*.txt" -o -iname "*.txt.gz" \) \
      ! -iname "*changelog*" ! -iname "*copyright*" ! -iname "*license*" ! -iname "*copying*" \
      ! -iname "*news*" -print0; find "$src" -name "*.rst.txt" -print0; } > "$DATA/prose-files"
fi
if [[ -n "${PROSE:-}" && ! -s "$DATA/prose-long/test.jsonl" ]]; then
  # One call with every file (xargs would split a long list into calls that overwrite each
  # other's output; the shell refuses a list too long instead).
  mapfile -d '' docs < "$DATA/prose-files"
  [[ -s "$DATA/prose/dev.jsonl" ]] ||
    "$PYTHON" "$ROOT/tools/make_prose_dataset.py" --out "$DATA/prose" --seed 13 \
      --train 3000 --dev 200 --test 300 "${docs[@]}"
  # Long documents of real prose, for scoring only: the dev and test files of 4,000 words and
  # punctuation marks or more, each document 4,000 to 32,000 of them (docs/demo-model.md).
  "$PYTHON" "$ROOT/tools/make_prose_dataset.py" --out "$DATA/prose-long" --seed 15 --train 0 \
    --dev 150 --test 200 --min_tokens 4000 --max_tokens 32000 --max_files 100000 \
    --min_file_tokens 4000 "${docs[@]}"
fi
# The mixes: each round's examples from rows of the sets no earlier round took.
mix() { "$PYTHON" "$ROOT/tools/mix_sets.py" "$DATA" "$@"; }
if [[ ! -s "$DATA/calib.jsonl" ]]; then
  mix mix/train.jsonl --seed 11 man/train:man-:0:6000 s1/train:s1-:0:2600 s2/train:s2-:0:1400
  mix mix/dev.jsonl --seed 3 man/dev:man-:0:120 s1/dev:s1-:0:60
  mix mix2/train.jsonl --seed 12 man-md/train:md-:0:5000 s1/train:s1-:2600:4400 \
    s2/train:s2-:1400:2400
  mix mix2/dev.jsonl --seed 3 man-md/dev:md-:0:120 s1/dev:s1-:0:60
  mix calib.jsonl man/dev:man-:0:200 long/dev:long-:0:100 man-md/dev:md-:120:200
fi
if [[ -n "${PROSE:-}" && ! -s "$DATA/calib3.jsonl" ]]; then
  mix mix3/train.jsonl --seed 13 prose/train:prose-:0: man/train:man-:6000:6800 \
    man-md/train:md-:5000:5800 s1/train:s1-:4400:5600 s2/train:s2-:2400:3200
  mix mix3/dev.jsonl --seed 3 prose/dev:prose-:0:100 man-md/dev:md-:0:60 s1/dev:s1-:0:40
  mix calib3.jsonl calib::0: prose/dev:prose-:100:200
fi
[[ -z "${DATA_ONLY:-}" ]] || exit 0

train() {  # from, to, mix, steps, lr, warmup, seed, evaluate every
  stdbuf -oL "$BUILD/train/longqa-train" --init_model "$1" --out "$2" \
    --stages "$DATA/$3/train.jsonl" --stage_dev "$DATA/$3/dev.jsonl" --steps "$4" --lr "$5" \
    --warmup "$6" --seed "$7" --eval_every "$8" --batch_tokens 2048 --max_batch 8 \
    --eval_examples 90 --save_every 50 --threads "$THREADS" --device cpu >> "$2.log" 2>&1
}
train "$FROM" "$WORK/realtext" mix 1500 3e-5 30 5 100
train "$WORK/realtext" "$WORK/realtext2" mix2 800 2e-5 20 6 200
# The round scored: its calibration set, folder, scores and test sets.
last=realtext2 calib=calib eval="$WORK/eval" shipped="$WORK/shipped"
sets="man/test man-mdtest/test real long/test"
if [[ -n "${PROSE:-}" ]]; then
  train "$WORK/realtext2" "$WORK/realtext3" mix3 800 2e-5 20 7 200
  last=realtext3 calib=calib3 eval="$WORK/eval3" shipped="$WORK/shipped3"
  sets="prose/test prose-long/test $sets"
fi

# shellcheck disable=SC2086  # sets: a word list
"$ROOT/tools/ship_realtext_round.sh" "$WORK/$last" "$DATA/$calib.jsonl" "$eval" "$shipped" \
  "$FROM" "$DATA" $sets
