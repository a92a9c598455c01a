# Sourced by the scripts that serve a model for a while (tools/eval_demo.sh, bench/int8_recheck.sh,
# bench/server_bench.sh). `start_server BUILD LOG FLAGS...` starts BUILD/server/longqa-server on a
# free loopback port with FLAGS (the model, metrics, threads: the caller's), its stderr in LOG, waits
# up to SERVER_START_S seconds (default 300: int8 calibrates at load, 13 s alone on a 2-core AVX2
# CPU and past 60 beside a training run) for the line that names its ports and sets server_pid,
# port and metrics_port (0 with metrics off); returns 1 naming LOG when the server exits or does
# not start in time.
start_server() {
  local build="$1" log="$2"
  shift 2
  "$build/server/longqa-server" --listen=127.0.0.1:0 "$@" 2>"$log" &
  server_pid=$!
  port="" metrics_port=""
  local ports=""
  for _ in $(seq 1 $((${SERVER_START_S:-300} * 10))); do
    ports=$(sed -n 's/.*on port \([0-9]*\), metrics on port \([0-9]*\).*/\1 \2/p' "$log")
    [ -n "$ports" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$ports" ]; then
    echo "longqa-server did not start; see $log" >&2
    kill "$server_pid" 2>/dev/null || true
    return 1
  fi
  read -r port metrics_port <<< "$ports"
}
