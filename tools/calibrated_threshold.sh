#!/usr/bin/env bash
# Prints the null threshold that `longqa eval --calibrate_null` chose, from its report (a line
# "null threshold T (chosen on this set: ...)"); the last such line where a rerun appended another.
# Fails, saying so, when the report has none (an eval that stopped before calibrating).
# --ship_flags: tools/ship_model.py's flags instead, one a line: --null_threshold=T and, for a
# report made with --null_bands, --null_threshold_band=N:T for each band of the last run (an
# interrupted run's client may have appended its own lines before them).
# Usage: tools/calibrated_threshold.sh [--ship_flags] REPORT.txt
set -euo pipefail
if [[ $1 == --ship_flags ]]; then
  flags=$(tac "$2" | sed -n -e '/^null threshold /{p;q}' -e '/^null_threshold_band /p' |
    sed -n -e 's/^null threshold \([^ ]*\) .*/--null_threshold=\1/p' \
      -e 's/^null_threshold_band \([0-9]*\) \([^ ]*\) .*/--null_threshold_band=\1:\2/p')
  [[ $flags == *--null_threshold=* ]] ||
    { echo "$0: no calibrated null threshold in $2" >&2; exit 1; }
  echo "$flags"
  exit 0
fi
t=$(sed -n 's/^null threshold \([^ ]*\) .*/\1/p' "$1" | tail -n 1)
[[ -n $t ]] || { echo "$0: no calibrated null threshold in $1" >&2; exit 1; }
echo "$t"
