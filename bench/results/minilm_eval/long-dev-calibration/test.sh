#!/usr/bin/env bash
# After calib.sh: both models on the 8k-32k test split at their long-dev thresholds.
set -euo pipefail
cd /work/main
while pgrep -f recal/calib.sh > /dev/null; do sleep 20; done
W=/work/minilm-train; R=/work/recal
for m in demo:models/demo cluster_former-long:$W/shipped/cluster_former-long; do
  name=${m%%:*}; src=${m#*:}
  t=$(tools/calibrated_threshold.sh $R/dev-long/$name.txt)
  rm -rf $R/models/$name; mkdir -p $R/models; cp -r $src $R/models/$name
  .venv/bin/python - $R/models/$name/config.json $t <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["null_threshold"] = float(sys.argv[2])
json.dump(c, open(sys.argv[1], "w"), indent=2)
PY
done
THREADS=1 tools/eval_demo.sh $W/data/long/test.jsonl $R/test $R/models/demo $R/models/cluster_former-long
for name in demo cluster_former-long; do
  .venv/bin/python tools/demo_report.py $W/data/long/test.jsonl $name=$R/test/$name.predictions.json > $R/test/$name.kinds.md
done
echo test-done
