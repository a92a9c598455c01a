#!/usr/bin/env python3
"""Makes a servable model folder out of a training checkpoint: what the server reads and nothing
else, weights stored in half precision, and the null threshold chosen on dev.

    tools/ship_model.py CHECKPOINT_DIR OUT_DIR [--dtype f16|bf16|f32] [--null_threshold T]
                        [--null_threshold_band MIN_TOKENS:T ...] [--answer_score type|type+long]
                        [--default_precision fp32|bf16|int8|bf16,int8...]
                        [--int8_recheck_margin M]

Copies config.json (with `null_threshold` set when given: the value `longqa eval
--calibrate_null` printed on a dev split; --null_threshold_band, repeated, sets the bands of
`--calibrate_null --null_bands`: documents of MIN_TOKENS tokens or more get T, and a band replaces
any the checkpoint had; --answer_score, what the no-answer rule weighs NO_ANSWER against, must be
the one the threshold was calibrated with), the tokenizer file config.json names, and
model.safetensors with every floating-point tensor cast to --dtype (default f16: half the bytes;
the server computes in fp32 unless told otherwise, docs/model-format.md). --default_precision sets
the arithmetic `longqa-server --precision=auto` serves in where the device runs it natively (a list
in order of preference: the first the device runs natively): give it only after
bench/precision_answers.sh measured each precision's answers against fp32 on dev.
--int8_recheck_margin sets checked int8's margin (docs/model-format.md): the margin
bench/int8_recheck.sh chose from the model's own int8 noise on dev.
Optimizer moments, trainer state and logs stay behind.

Python here is a tool, never the server. Needs torch and safetensors.
"""
import argparse
import json
import math
import os
import shutil
import sys

import torch
from safetensors.torch import load_file, save_file

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def precision_list(text):
    """--default_precision: one precision or a comma-separated list of them (config.cc checks)."""
    if not all(name in ("fp32", "bf16", "int8") for name in text.split(",")):
        raise argparse.ArgumentTypeError(
            f"{text!r}: each of the list must be fp32, bf16 or int8 (e.g. bf16,int8)")
    return text


def threshold_band(text):
    """--null_threshold_band MIN_TOKENS:T (config.json null_threshold_bands)."""
    try:
        tokens, threshold = text.split(":")
        band = {"min_document_tokens": int(tokens), "null_threshold": float(threshold)}
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected MIN_TOKENS:THRESHOLD, e.g. 4096:7.55")
    if band["min_document_tokens"] <= 0 or not math.isfinite(band["null_threshold"]):
        raise argparse.ArgumentTypeError(f"{text!r}: MIN_TOKENS must be positive, T finite")
    return band


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("out")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="f16")
    parser.add_argument("--null_threshold", type=float)
    parser.add_argument("--null_threshold_band", type=threshold_band, action="append",
                        help="MIN_TOKENS:T, repeated: the threshold of documents that long or longer")
    parser.add_argument("--answer_score", choices=["type", "type+long"],
                        help="type+long: the best paragraph's long score joins the answer's side")
    parser.add_argument("--default_precision", type=precision_list,
                        help="fp32, bf16, int8, or a list in order of preference (bf16,int8)")
    parser.add_argument("--int8_recheck_margin", type=float,
                        help="int8 answers closer than this (logits) are computed again in fp32")
    args = parser.parse_args(argv)

    with open(os.path.join(args.checkpoint, "config.json")) as f:
        config = json.load(f)
    if args.null_threshold is not None:
        if not math.isfinite(args.null_threshold):
            parser.error("--null_threshold must be finite")
        config["null_threshold"] = args.null_threshold
    if args.null_threshold_band:
        bands = sorted(args.null_threshold_band, key=lambda b: b["min_document_tokens"])
        if len({b["min_document_tokens"] for b in bands}) != len(bands):
            parser.error("--null_threshold_band: each MIN_TOKENS once")
        config["null_threshold_bands"] = bands
    if args.answer_score == "type":
        config.pop("answer_score", None)  # the default, written as the server writes it: absent
    elif args.answer_score is not None:
        config["answer_score"] = args.answer_score
    if args.default_precision is not None:
        config["default_precision"] = args.default_precision
    if args.int8_recheck_margin is not None:
        if not (math.isfinite(args.int8_recheck_margin) and args.int8_recheck_margin >= 0):
            parser.error("--int8_recheck_margin must be a finite number >= 0")
        config["int8_recheck_margin"] = args.int8_recheck_margin
    tokenizer = config.get("tokenizer", "spm.model")

    weights = load_file(os.path.join(args.checkpoint, "model.safetensors"))
    dtype = DTYPES[args.dtype]
    cast = {name: (t.to(dtype) if t.is_floating_point() else t).contiguous()
            for name, t in weights.items()}
    # fp16 holds magnitudes up to 65504; a weight beyond it would become inf.
    for name, t in cast.items():
        if t.is_floating_point() and not torch.isfinite(t).all():
            sys.exit(f"ship_model: {name} does not fit in {args.dtype}")

    os.makedirs(args.out, exist_ok=True)
    save_file(cast, os.path.join(args.out, "model.safetensors"))
    shutil.copyfile(os.path.join(args.checkpoint, tokenizer), os.path.join(args.out, tokenizer))
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    size = os.path.getsize(os.path.join(args.out, "model.safetensors"))
    print(f"{args.out}: {len(cast)} tensors, {size / 1e6:.1f} MB ({args.dtype})"
          + (f", null_threshold {args.null_threshold:g}" if args.null_threshold is not None else "")
          + (f", answer_score {config['answer_score']}" if "answer_score" in config else "")
          + "".join(f", {b['null_threshold']:g} from {b['min_document_tokens']} tokens"
                    for b in config.get("null_threshold_bands", [])))


if __name__ == "__main__":
    main(sys.argv[1:])
