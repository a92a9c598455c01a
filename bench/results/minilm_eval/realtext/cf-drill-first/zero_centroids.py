#!/usr/bin/env python3
"""Gives a Cluster-Former folder K zero centroids in every cluster layer (config.json's
num_clusters and the .centroids tensors), in place: longqa-centroids or longqa-train (before its
first step) then fits them. Usage: zero_centroids.py FOLDER K"""
import json
import sys

import torch
from safetensors.torch import load_file, save_file

folder, k = sys.argv[1], int(sys.argv[2])
config = json.load(open(f"{folder}/config.json"))
config["num_clusters"] = [k] * len(config["num_clusters"])
json.dump(config, open(f"{folder}/config.json", "w"), indent=2, sort_keys=True)
weights = load_file(f"{folder}/model.safetensors")
for name in [n for n in weights if n.endswith(".centroids")]:
    weights[name] = torch.zeros(k, config["hidden_size"])
save_file(weights, f"{folder}/model.safetensors")
