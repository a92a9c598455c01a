# shellcheck shell=bash
# Sourced by replay-stage.sh, realtext.sh and mixed-round.sh: round 6's table settings
# (docs/demo-model.md, "Round 6"), the env tools/train_minilm_tables.sh makes the real-English
# round's mix and trains with: `env "${ROUND6[@]}" tools/train_minilm_tables.sh ...`.
# shellcheck disable=SC2034  # read by the scripts that source this
ROUND6=(TABLES=4000 LONG_TABLES=0.6 TABLE_HEADER_TOKENS=32 BY_MEANING=0.3)
