#!/usr/bin/env bash
# After the sliding run: threshold on the 8k-32k dev set, then the test split at it (fp32 weights).
set -euo pipefail
cd /work/main
while pgrep -f "out /work/minilm-train/sliding " > /dev/null; do sleep 30; done
W=/work/minilm-train; R=/work/s18/eval
mkdir -p $R/models
grep -q '"step": 2000' $W/sliding/trainer_state.json || { echo "sliding not at step 2000"; exit 1; }
EVAL_FLAGS=--calibrate_null THREADS=1 tools/eval_demo.sh $W/data/long/dev.jsonl $R/dev-long $W/sliding
t=$(tools/calibrated_threshold.sh $R/dev-long/sliding.txt)
rm -rf $R/models/sliding; cp -r $W/sliding $R/models/
rm -f $R/models/sliding/optimizer.safetensors
.venv/bin/python - $R/models/sliding/config.json $t <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["null_threshold"] = float(sys.argv[2])
json.dump(c, open(sys.argv[1], "w"), indent=2)
PY
THREADS=1 tools/eval_demo.sh $W/data/long/test.jsonl $R/test $R/models/sliding
.venv/bin/python tools/demo_report.py $W/data/long/test.jsonl sliding=$R/test/sliding.predictions.json > $R/test/sliding.kinds.md
echo sliding-eval-done
