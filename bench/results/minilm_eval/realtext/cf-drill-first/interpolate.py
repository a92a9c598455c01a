#!/usr/bin/env python3
"""Weight-space ensembling of a fine-tuned model with its start (WiSE-FT, Wortsman et al. 2022):
OUT = END's folder with every trained tensor (1 - ALPHA) * START + ALPHA * END, and the cluster
layers' centroids zeroed (zero_centroids.py's layout) for longqa-centroids to fit to the mixed
weights' own states. START and END must share config.json's shapes (same tensor names and sizes).
Usage: interpolate.py START END ALPHA OUT"""
import json
import shutil
import sys

import torch
from safetensors.torch import load_file, save_file

start, end, alpha, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
shutil.rmtree(out, ignore_errors=True)
shutil.copytree(end, out, ignore=shutil.ignore_patterns("optimizer.safetensors",
                                                        "trainer_state.json"))
a, b = load_file(f"{start}/model.safetensors"), load_file(f"{end}/model.safetensors")
if a.keys() != b.keys():
    sys.exit(f"tensor names differ: {sorted(set(a) ^ set(b))}")
mixed = {}
for name, w in b.items():
    if name.endswith(".centroids"):
        mixed[name] = torch.zeros_like(w)
    elif a[name].shape != w.shape:
        sys.exit(f"{name}: {tuple(a[name].shape)} against {tuple(w.shape)}")
    else:
        mixed[name] = ((1 - alpha) * a[name].float() + alpha * w.float()).to(w.dtype)
save_file(mixed, f"{out}/model.safetensors")
config = json.load(open(f"{out}/config.json"))
print(f"{out}: {len(mixed)} tensors, {alpha} of {end} and {1 - alpha:g} of {start}, "
      f"centroids zeroed ({config['num_clusters']})")
