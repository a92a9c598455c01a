#!/usr/bin/env bash
# Prints the null threshold that `longqa eval --calibrate_null` chose, from its report (a line
# "null threshold T (chosen on this set: ...)"); the last such line where a rerun appended another.
# Fails, saying so, when the report has none (an eval that stopped before calibrating).
# Usage: tools/calibrated_threshold.sh REPORT.txt
set -euo pipefail
t=$(sed -n 's/^null threshold \([^ ]*\) .*/\1/p' "$1" | tail -n 1)
[[ -n $t ]] || { echo "$0: no calibrated null threshold in $1" >&2; exit 1; }
echo "$t"
