#!/bin/bash
# The A/B harness of int8_ab.sh (run from the repository root): prep.py writes part (c)'s model and
# documents to /tmp/qa; run.sh SERVER PRECISION ROUNDS [perf] asks them ROUNDS times.
# run.sh SERVER PRECISION ROUNDS [perf]
SERVER=${1:-build/server/longqa-server}; P=${2:-int8}; R=${3:-3}
$SERVER --model_dir=/tmp/qa/longqa --listen=127.0.0.1:0 --metrics_listen=127.0.0.1:0 --http_listen=127.0.0.1:0 --threads=2 --precision=$P 2>/tmp/qa/server.log &
pid=$!
for i in $(seq 100); do port=$(sed -n 's/.*HTTP API on port \([0-9]*\).*/\1/p' /tmp/qa/server.log); [ -n "$port" ] && break; sleep 0.2; done
if [ "$4" = perf ]; then perf record -F 999 -p $pid -o /tmp/qa/perf.data 2>/dev/null & perfpid=$!; sleep 0.5; fi
.venv/bin/python "$(dirname "$0")/ask.py" $port $R
[ "$4" = perf ] && kill -INT $perfpid && wait $perfpid
kill $pid; wait $pid 2>/dev/null
