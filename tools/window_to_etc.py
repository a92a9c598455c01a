#!/usr/bin/env python3
"""Makes an ETC model folder from a trained longqa window model (Cluster-Former or sliding-window).

    tools/window_to_etc.py MODEL_DIR OUT_DIR [--max_segments 256] [--hard_g2l_mask] ...

Why: an ETC lifted straight from MiniLM has to learn this project's task from nothing (curriculum,
yes/no, real English: about 3 hours on 2 cores), while a fine-tuned window model already reads it.
Every encoder layer keeps its weights (the same projections for ETC's four attention pieces, as
tools/import_hf.py's lift), the heads stay, a C layer's centroids are dropped, and each layer gets
ETC's relative-label embeddings, zero at first, so that the first step attends as the window
model did (scores q·k) and training adds the labels from there. Positions: "document" (long
token t at question pieces + 2 + t, as in a window, wrapping around the table) by default.
The folder's null threshold is reset to 0: calibrate it again (longqa eval --calibrate_null).
--supporting_fact_head adds ETC's supporting-fact head (docs/model-format.md): a training signal
that asks the segment tokens of the paragraphs an answer needs to score 1, the others 0.
--entity_globals N adds up to N entity tokens a document (ETC's WikiHop links): one global token per
word of several pieces that recurs in two or more paragraphs, "part of" each of its mentions.
--pool_entity_mentions makes each entity token hold the mean of its mentions' states before every
layer (etc.pool_entity_mentions): a mention reads the name's other mentions in one layer. Not used
at the first step; with --part_of_prior 4 a drill learned to use it (docs/demo-model.md).
--part_of_prior P starts the "part of" label's embedding at P (natural-log units of attention) for
the layer's mean query instead of zero: a long token then attends e^P times more to its own segment
and entity tokens from the first step (the mean query taken as W_Q times the bias of the LayerNorm
before the layer, plus b_Q: the part of a query that every token shares).
"""
import argparse
import json
import os
import shutil
import sys

import torch
from safetensors.torch import load_file, save_file

# Keys of a window model's config that an ETC config has no use for.
WINDOW_ONLY = ("window_tokens", "stride_tokens", "num_clusters", "clustered_attention",
               "table_header_tokens", "null_threshold_bands")


def fail(message):
    sys.exit(f"window_to_etc: {message}")


def part_of_prior(weights, layer, heads, prior):
    """A "part of" embedding a with q_mean · a / sqrt(dh) = prior in every head of the layer."""
    before = ("embeddings.LayerNorm.bias" if layer == 0
              else f"encoder.layer.{layer - 1}.output.LayerNorm.bias")
    scope = f"encoder.layer.{layer}.attention.self.query"
    q_mean = weights[scope + ".weight"] @ weights[before] + weights[scope + ".bias"]
    dh = q_mean.numel() // heads
    per_head = q_mean.view(heads, dh)
    scale = prior * dh ** 0.5 / per_head.pow(2).sum(1, keepdim=True).clamp_min(1e-6)
    return (per_head * scale).reshape(-1)


def convert(args):
    with open(os.path.join(args.model_dir, "config.json")) as f:
        config = json.load(f)
    if config.get("architecture") != "cluster_former":
        fail(f"{args.model_dir} is not a window model (architecture {config.get('architecture')})")
    if config.get("qa_format", "nq") != "nq":
        fail("only qa_format nq models (paragraph tokens) can become ETC models")
    layers = config["layers"]
    if set(layers) - {"S", "C"}:
        fail(f"layers {layers}: only S and C layers share ETC's projections")
    if args.positions != "none" and "max_position_embeddings" not in config:
        fail("the model has no position table to keep")

    weights = {}
    for name, tensor in load_file(os.path.join(args.model_dir, "model.safetensors")).items():
        if name.endswith(".centroids"):
            continue
        weights[name] = tensor.to(torch.float32).contiguous()
    if args.positions == "none":
        weights.pop("embeddings.position_embeddings.weight", None)
    labels = 2 * args.relative_clip + 3
    d = config["hidden_size"]
    heads = config["num_heads"]
    for i in range(len(layers)):
        relative = torch.zeros(labels, d)
        if args.part_of_prior:
            relative[2 * args.relative_clip + 1] = part_of_prior(weights, i, heads,
                                                                 args.part_of_prior)
        weights[f"encoder.layer.{i}.attention.self.relative_key"] = relative
    if args.supporting_fact_head:  # new, initialised as import_hf.py's new heads
        generator = torch.Generator().manual_seed(args.seed)
        weights["supporting_fact.weight"] = torch.empty(1, d).normal_(0.0, 0.02,
                                                                      generator=generator)
        weights["supporting_fact.bias"] = torch.zeros(1)

    for key in WINDOW_ONLY:
        config.pop(key, None)
    config["architecture"] = "etc"
    config["layers"] = "E" * len(layers)
    config["null_threshold"] = 0.0
    config["etc"] = {"radius": args.radius, "relative_clip": args.relative_clip,
                     "shared_projections": True, "hard_g2l_mask": args.hard_g2l_mask,
                     "max_segments": args.max_segments, "positions": args.positions,
                     "supporting_fact_head": args.supporting_fact_head,
                     "entity_globals": args.entity_globals,
                     "pool_entity_mentions": args.pool_entity_mentions}
    if args.positions == "none":
        config.pop("max_position_embeddings", None)

    os.makedirs(args.out_dir, exist_ok=True)
    save_file(weights, os.path.join(args.out_dir, "model.safetensors"))
    with open(os.path.join(args.out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    for extra in ("tokenizer.json", "spm.model", "calibration.txt"):
        if os.path.exists(os.path.join(args.model_dir, extra)):
            shutil.copyfile(os.path.join(args.model_dir, extra), os.path.join(args.out_dir, extra))
    print(f"wrote {args.out_dir}: etc, layers {config['layers']} from {layers}, "
          f"{len(weights)} tensors")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model_dir")
    p.add_argument("out_dir")
    p.add_argument("--radius", type=int, default=84)
    p.add_argument("--relative_clip", type=int, default=12)
    p.add_argument("--positions", choices=["document", "paragraph", "none"], default="document")
    p.add_argument("--max_segments", type=int, default=256,
                   help="most segment (global) tokens; consecutive paragraphs merge beyond it")
    p.add_argument("--hard_g2l_mask", action="store_true",
                   help="a segment token attends only to its own segment's tokens")
    p.add_argument("--supporting_fact_head", action="store_true",
                   help="a supporting-fact head on the segment tokens, trained by longqa-train's "
                        "supporting-fact loss from the data's \"supporting\" paragraphs")
    p.add_argument("--entity_globals", type=int, default=0,
                   help="most entity tokens a document (0: none), each linked to its mentions")
    p.add_argument("--pool_entity_mentions", action="store_true",
                   help="an entity token holds the mean of its mentions' states before each layer")
    p.add_argument("--part_of_prior", type=float, default=0.0,
                   help="the 'part of' label's start, in log units of attention for the mean query")
    p.add_argument("--seed", type=int, default=1, help="seed of the new head's initialisation")
    convert(p.parse_args())


if __name__ == "__main__":
    main()
