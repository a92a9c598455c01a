#!/usr/bin/env bash
# Session 53: the test split's nine one-hop company questions ("Which company did X found?") and
# its first nine unanswerable company questions, every answer forced, margins (answer score minus
# NO_ANSWER's) for models/demo, the three stages of run.sh and the last refitted to 16 centroids
# (ls-k16; after run.sh LONG_STAGE=1).
set -euo pipefail
cd "$(dirname "$0")/../../../../.."
W=build/cf-r9
R=bench/results/minilm_eval/realtext/cf-drill-first
python3 - $W <<'PY'
import json, re, sys
one, un = [], []
for line in open(f"{sys.argv[1]}/data/long/test.jsonl"):
    g = json.loads(line)
    if re.search(r"found|business|firm|company|organisation", g["question"].lower()):
        {"one_hop": one, "unanswerable": un}.get(g["kind"], []).append(line)
open(f"{sys.argv[1]}/company9.jsonl", "w").writelines(one + un[:9])
PY
# shellcheck source=bench/results/minilm_eval/realtext/cf-drill-first/forced.sh
source $R/forced.sh
for m in init-drill hop0-drill; do
  ship_forced $m $W/$m
done
# shellcheck source=tools/start_server.sh
source tools/start_server.sh
for m in sliding init-drill hop0-drill k256-long-stage ls-k16; do
  start_server build $W/company-$m.server.log --model_dir=$W/forced/$m --metrics_listen= \
    --threads=2 --max_batch_tokens=32768
  python3 bench/results/minilm_eval/realtext/cf-from-round5/continued/null_scores.py collect \
    "$port" $W/company9.jsonl $R/company-$m.json > /dev/null
  kill "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  python3 - $R/company-$m.json $m <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
for kind in ("one_hop", "unanswerable"):
    margins = sorted(round(r["best"] - r["null"], 1) for r in rows if r["kind"] == kind)
    right = sum(r["long_ok"] for r in rows if r["kind"] == kind)
    print(sys.argv[2], kind, "long right", right, "margins", margins)
PY
done
