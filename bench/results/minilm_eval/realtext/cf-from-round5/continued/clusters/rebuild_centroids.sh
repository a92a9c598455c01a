#!/usr/bin/env bash
# Session 49: the Cluster-Former (build/cf-r6/type-long) with its C layers' centroids rebuilt
# (longqa-centroids, 20 8k-16k training documents) at K clusters, every answer forced on the 74
# one-hop and yes/no test questions whose documents have 81 kB or more (build/cf-r6/long-tail.jsonl).
set -euo pipefail
cd "$(dirname "$0")/../../../../../../.."
W=build/cf-r6
k=${K:-64}  # K=16: the control
d=$W/k$k
rm -rf $d && mkdir -p $d && cp $W/type-long/* $d/
.venv/bin/python - "$d" "$k" <<'PY'
import json, sys, torch
from safetensors.torch import load_file, save_file
d, k = sys.argv[1], int(sys.argv[2])
c = json.load(open(d + "/config.json")); c["num_clusters"] = [k, k]
json.dump(c, open(d + "/config.json", "w"), indent=2, sort_keys=True)
w = load_file(d + "/model.safetensors")
for name in [n for n in w if n.endswith(".centroids")]:
    w[name] = torch.randn(k, w[name].shape[1])  # placeholders: longqa-centroids rewrites them
save_file(w, d + "/model.safetensors")
PY
echo "k$k centroids $(date +%T)"
build/tools/longqa-centroids --model_dir=$d --corpus=$W/centroid-corpus.jsonl --threads=2
echo "k$k eval $(date +%T)"
THREADS=2 EVAL_FLAGS="--calibrate_null --timeout_s=900" tools/eval_demo.sh $W/long-tail.jsonl $W/eval/long-tail $d
echo "done $(date +%T)"
