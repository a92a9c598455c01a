#!/usr/bin/env bash
# Session 71: where the second hop runs, measured at learning rate 0 (the trainer's batch figures,
# "long" = long answer right) on the drill's 56 two-hop dev questions.
# 1. The kept Cluster-Former (SSCSSC) with one or both cluster layers run as window layers (same
#    weights, their centroids dropped): which layer carries the hop.
# 2. The ETC drill models (MODELS, folders of W: run.sh's; drill-ent64-pool-prior4 as kept, its
#    step-400 checkpoint) as trained, with pooled entity tokens unpooled, and without entity
#    tokens (same weights): is the entity route used.
# 3. ETC converted from the Cluster-Former at step 0: plain entity tokens, with the "part of"
#    prior 2, pooled, pooled with the prior: does any give the hop before training.
# Env: W (build/etc-cf; its data-sup/ is run.sh's). Prints one line a model.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../.."
W="${W:-build/etc-cf}"
MODELS="${MODELS:-drill-ent64-pool drill-ent64-prior2 drill-ent64-pool-prior4}"
out=$W/route-checks
rm -rf "$out" && mkdir -p "$out"
questions=$out/two-hop-dev.jsonl
grep '"kind": "two_hop"' "$W/data-sup/drill-s1/dev.jsonl" > "$questions"

lr0() {  # NAME MODEL_DIR: the model at learning rate 0 on the two-hop questions
  env -u OPENBLAS_CORETYPE build/train/longqa-train --init_model "$2" --out "$out/run-$1" \
    --stages "$questions" --steps 4 --lr 0 --batch_tokens 100000 --max_batch 14 --log_every 4 \
    --threads 2 --device cpu 2>&1 | grep '^step' | sed "s/^/$1: /"
}
copy() {  # FROM TO [python edits of config c and weights w]
  mkdir -p "$2"
  cp "$1"/{config.json,model.safetensors,tokenizer.json} "$2/"
  .venv/bin/python - "$2" "${3:-}" <<'EOF'
import json, sys
from safetensors.torch import load_file, save_file
d, edit = sys.argv[1], sys.argv[2]
c = json.load(open(d + "/config.json")); w = load_file(d + "/model.safetensors")
exec(edit)
json.dump(c, open(d + "/config.json", "w"), indent=2); save_file(w, d + "/model.safetensors")
EOF
}

cf=models/checkpoints/cluster_former_minilm
for layers in SSCSSC SSSSSC SSCSSS SSSSSS; do
  copy "$cf" "$out/cf-$layers" "
c['layers'] = '$layers'; c['num_clusters'] = [256] * '$layers'.count('C')
for i, k in enumerate(c['layers']):
    if k != 'C': w.pop(f'encoder.layer.{i}.centroids', None)"
  lr0 "cf-$layers" "$out/cf-$layers"
done

for model in $MODELS; do  # as trained, unpooled (if pooled), without entity tokens
  copy "$W/$model" "$out/$model"
  lr0 "$model" "$out/$model"
  if grep -q '"pool_entity_mentions": true' "$W/$model/config.json"; then
    copy "$W/$model" "$out/$model-unpooled" "c['etc']['pool_entity_mentions'] = False"
    lr0 "$model-unpooled" "$out/$model-unpooled"
  fi
  copy "$W/$model" "$out/$model-none" \
    "c['etc']['pool_entity_mentions'] = False; c['etc']['entity_globals'] = 0"
  lr0 "$model-none" "$out/$model-none"
done

for flags in "" "--part_of_prior 2" "--pool_entity_mentions" "--pool_entity_mentions --part_of_prior 2"; do
  name=step0$(echo "$flags" | tr -d ' ' | tr -s '-' '_')
  # shellcheck disable=SC2086
  .venv/bin/python tools/window_to_etc.py "$cf" "$out/$name" --hard_g2l_mask --entity_globals 64 \
    $flags > /dev/null
  lr0 "$name" "$out/$name"
done
