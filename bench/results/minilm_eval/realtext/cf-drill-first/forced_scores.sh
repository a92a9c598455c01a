# shellcheck shell=bash
# Sourced by score_model.sh and matched-split.sh: `forced_scores MODEL GOLD OUT LOG` serves the
# model folder MODEL (build/server/longqa-server, its stderr in LOG) and keeps in OUT
# null_scores.py collect's rows for every question of GOLD, every answer forced.
# shellcheck source=tools/start_server.sh
source tools/start_server.sh
forced_scores() {
  start_server build "$4" --model_dir="$1" --metrics_listen= --threads=2 --max_batch_tokens=32768
  python3 bench/results/minilm_eval/realtext/cf-from-round5/continued/null_scores.py collect \
    "$port" "$2" "$3" > /dev/null
  kill "$server_pid"
}
