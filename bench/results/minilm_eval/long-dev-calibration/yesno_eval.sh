#!/usr/bin/env bash
# cluster_former-yesno: threshold on the 8k-32k dev set, then the test split at it (fp32 weights).
set -euo pipefail
cd /work/main
W=/work/minilm-train; R=/work/recal
EVAL_FLAGS=--calibrate_null THREADS=1 nice -n 19 tools/eval_demo.sh $W/data/long/dev.jsonl $R/dev-long $W/cluster_former-yesno
t=$(tools/calibrated_threshold.sh $R/dev-long/cluster_former-yesno.txt)
rm -rf $R/models/cluster_former-yesno; cp -r $W/cluster_former-yesno $R/models/
.venv/bin/python - $R/models/cluster_former-yesno/config.json $t <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["null_threshold"] = float(sys.argv[2])
json.dump(c, open(sys.argv[1], "w"), indent=2)
PY
THREADS=1 nice -n 19 tools/eval_demo.sh $W/data/long/test.jsonl $R/test $R/models/cluster_former-yesno
.venv/bin/python tools/demo_report.py $W/data/long/test.jsonl cluster_former-yesno=$R/test/cluster_former-yesno.predictions.json > $R/test/cluster_former-yesno.kinds.md
echo yesno-eval-done
