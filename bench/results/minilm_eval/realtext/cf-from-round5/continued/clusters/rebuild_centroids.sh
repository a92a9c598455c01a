#!/usr/bin/env bash
# Sessions 49-50: the Cluster-Former (build/cf-r6/type-long) with its C layers' centroids rebuilt
# by longqa-centroids on its final weights, every answer forced on the 74 one-hop and yes/no test
# questions whose documents have 81 kB or more (build/cf-r6/long-tail.jsonl).
#   K        clusters per C layer (16 as trained; 64)
#   MEMORY   longqa-centroids --memory: rows the bank keeps (100000; 20000 = the trainer's old bank)
#   CORPUS   realtext: 60 short real-English rows (man pages, tables, code) of its training mix;
#            default: 20 generated 8k-16k training documents (build/cf-r6/centroid-corpus.jsonl,
#            the first 20 of build/cf-r6/data/s5/train.jsonl)
set -euo pipefail
cd "$(dirname "$0")/../../../../../../.."
W=build/cf-r6
k=${K:-64}
memory=${MEMORY:-100000}
corpus=$W/centroid-corpus.jsonl
name=k$k
[ "$memory" = 100000 ] || name=$name-m$((memory / 1000))k
if [ "${CORPUS:-}" = realtext ]; then
  corpus=$W/realtext-corpus.jsonl
  name=$name-realtext
  .venv/bin/python - "$corpus" <<'PY'
import json, sys
rows = [json.loads(l) for l in open("build/cf-r6/data/cf/train.jsonl")]
generated = ("one_hop", "two_hop", "yes_no", "unanswerable")
with open(sys.argv[1], "w") as f:
    for r in [r for r in rows if r["kind"] not in generated][:60]:
        f.write(json.dumps({"question": r["question"], "paragraphs": r["paragraphs"]}) + "\n")
PY
fi
d=$W/$name
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
echo "$name centroids $(date +%T)"
build/tools/longqa-centroids --model_dir=$d --corpus=$corpus --threads=2 --memory=$memory
echo "$name eval $(date +%T)"
THREADS=2 EVAL_FLAGS="--calibrate_null --timeout_s=900" tools/eval_demo.sh $W/long-tail.jsonl $W/eval/long-tail-$name $d
echo "done $(date +%T)"
