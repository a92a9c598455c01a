#!/usr/bin/env python3
"""Converts a Hugging Face BERT / RoBERTa / XLM-R checkpoint into a longqa model folder.

    tools/import_hf.py HF_DIR OUT_DIR [--layers SSSSCS] [--architecture etc] ...

HF_DIR holds config.json, model.safetensors (or pytorch_model.bin) and tokenizer.json, as saved
by `save_pretrained`; plain encoders (BertModel, RobertaModel, XLMRobertaModel) and
*ForQuestionAnswering checkpoints are accepted. The weights keep their names (longqa uses
BERT/RoBERTa names without the `bert.`/`roberta.` prefix: docs/model-format.md); the QA head's
two logits become `qa_outputs`. Heads the checkpoint lacks (`qa_outputs` of a plain encoder,
`long_answer`, `answer_type`) are initialised like BERT's (normal(0, 0.02), zero bias) and listed
in config.json's `untrained_heads`, which the server warns about.

Cluster-Former layers (`--layers` with C) load the encoder's weights unchanged: every window gets
the same position ids. Their centroids start at zero; the command that computes them from a
corpus (`longqa-centroids`) is printed. `--architecture etc` lifts the weights into ETC: the same
projections for all four attention pieces, relative-label embeddings new (normal(0, 0.02)); the
absolute position embeddings stay, numbered through the document after the question and wrapping
around the table (`etc.positions: "document"`, Longformer's tiling), or within each paragraph
(`--etc_positions paragraph`), or dropped (`none`: ETC's relative labels only). Measured on
MiniLM (docs/demo-model.md): only "document" learned long answers, and faster with one segment
token (`--etc_max_segments 1`) than with one per paragraph; with one per paragraph and
`--etc_hard_g2l_mask` (a segment token sees only its own paragraph) it reads single facts best.

`--qa_format` (default: squad for a checkpoint with a QA head and S layers only, else nq) says
how the server lays out windows and decodes. "squad" serves an extractive (SQuAD-style) checkpoint
exactly as it was fine-tuned and as transformers' question-answering pipeline runs it: windows
[CLS] question [SEP] context [SEP] with token type 1 on the context, no paragraph tokens,
windows independent, the best span by per-window softmax. The pipeline with max_seq_len =
question tokens + 3 + window_tokens and doc_stride = window_tokens - stride_tokens sees the same
windows. "nq" is longqa's own layout (paragraph tokens, merged windows, answer-type and
long-answer heads), the one to fine-tune with longqa-train.

Python here is a tool, never the server. Needs torch, safetensors (and transformers only for
`.bin` checkpoints).
"""
import argparse
import json
import os
import shutil
import sys

import torch
from safetensors.torch import load_file, save_file

# model_type -> (prefix of the encoder's tensors, first position id)
FAMILIES = {
    "bert": ("bert.", 0),
    "roberta": ("roberta.", None),  # RoBERTa numbers positions from padding_idx + 1
    "xlm-roberta": ("roberta.", None),
    "camembert": ("roberta.", None),
}
QA_HEAD = "qa_outputs"
NUM_ANSWER_TYPES = 5  # null, yes, no, short, long


def fail(message):
    sys.exit(f"import_hf: {message}")


def load_hf_weights(hf_dir):
    path = os.path.join(hf_dir, "model.safetensors")
    if os.path.exists(path):
        return load_file(path)
    path = os.path.join(hf_dir, "pytorch_model.bin")
    if os.path.exists(path):
        return torch.load(path, map_location="cpu")
    fail(f"{hf_dir} has neither model.safetensors nor pytorch_model.bin")


def special_id(vocab, names, what):
    for name in names:
        if name in vocab:
            return vocab[name]
    fail(f"tokenizer.json has no {what} token (tried {', '.join(names)})")


def tokenizer_vocab(tokenizer):
    """Piece -> id for WordPiece/BPE (dict) and Unigram (list of [piece, score])."""
    vocab = tokenizer["model"]["vocab"]
    if isinstance(vocab, list):
        vocab = {piece: i for i, (piece, _score) in enumerate(vocab)}
    for added in tokenizer.get("added_tokens", []):
        vocab.setdefault(added["content"], added["id"])
    return vocab


def convert(args):
    with open(os.path.join(args.hf_dir, "config.json")) as f:
        hf = json.load(f)
    model_type = hf.get("model_type")
    if model_type not in FAMILIES:
        fail(f"model_type '{model_type}' is not supported (expected one of {sorted(FAMILIES)})")
    if hf.get("hidden_act", "gelu") != "gelu":
        fail(f"hidden_act '{hf['hidden_act']}' is not supported: longqa's layers use exact GELU")
    if hf.get("position_embedding_type", "absolute") != "absolute":
        fail("only absolute position embeddings are supported")
    tokenizer_path = os.path.join(args.hf_dir, "tokenizer.json")
    if not os.path.exists(tokenizer_path):
        fail(f"{args.hf_dir} has no tokenizer.json (save the fast tokenizer with save_pretrained)")
    with open(tokenizer_path) as f:
        tokenizer = json.load(f)
    vocab = tokenizer_vocab(tokenizer)

    prefix, first_position = FAMILIES[model_type]
    if first_position is None:
        first_position = hf.get("pad_token_id", 1) + 1
    num_layers = hf["num_hidden_layers"]
    architecture = args.architecture
    layers = args.layers or ("E" if architecture == "etc" else "S") * num_layers
    if len(layers) != num_layers:
        fail(f"--layers has {len(layers)} letters; the checkpoint has {num_layers} layers")

    # Encoder tensors without the family prefix; the QA head as it is.
    source = load_hf_weights(args.hf_dir)
    weights = {}
    for name, tensor in source.items():
        if name.startswith(prefix):
            name = name[len(prefix):]
        if name.startswith("pooler.") or name.endswith("position_ids") or name.startswith("lm_head."):
            continue
        if name.startswith("cls.") or name.startswith("classifier."):
            continue
        weights[name] = tensor.to(torch.float32).contiguous()
    d = hf["hidden_size"]
    generator = torch.Generator().manual_seed(args.seed)

    def new(shape):
        return torch.empty(shape).normal_(0.0, 0.02, generator=generator)

    qa_format = args.qa_format
    if qa_format == "auto":
        squad_ok = architecture == "cluster_former" and set(layers) == {"S"}
        qa_format = "squad" if squad_ok and f"{QA_HEAD}.weight" in weights else "nq"
    elif qa_format == "squad" and (architecture != "cluster_former" or set(layers) != {"S"}):
        fail("--qa_format squad needs --architecture cluster_former with S layers only")

    untrained = []
    for head, rows in ((QA_HEAD, 2), ("long_answer", 1), ("answer_type", NUM_ANSWER_TYPES)):
        if f"{head}.weight" not in weights:
            weights[f"{head}.weight"] = new((rows, d))
            weights[f"{head}.bias"] = torch.zeros(rows)
            # squad decoding reads the span head only: the other two are never used.
            if qa_format == "nq" or head == QA_HEAD:
                untrained.append(head)

    max_positions = hf["max_position_embeddings"]
    max_question = args.max_question_tokens
    window_ends = 3 if qa_format == "squad" else 2  # CLS, SEP (and squad's closing SEP)
    window = args.window_tokens or max_positions - first_position - (max_question + window_ends)
    stride = args.stride_tokens or max(1, window * 7 // 8)
    num_clusters = []
    if architecture == "etc":
        if args.etc_positions == "none":
            del weights["embeddings.position_embeddings.weight"]
        labels = 2 * args.etc_relative_clip + 3
        for i in range(num_layers):
            weights[f"encoder.layer.{i}.attention.self.relative_key"] = new((labels, d))
    else:
        for i, kind in enumerate(layers):
            if kind == "C":
                weights[f"encoder.layer.{i}.centroids"] = torch.zeros(args.clusters, d)
                num_clusters.append(args.clusters)

    config = {
        "architecture": architecture,
        "vocab_size": hf["vocab_size"],
        "hidden_size": d,
        "num_heads": hf["num_attention_heads"],
        "intermediate_size": hf["intermediate_size"],
        "position_offset": first_position,
        "type_vocab_size": hf.get("type_vocab_size", 1),
        "layer_norm_eps": hf.get("layer_norm_eps", 1e-12),
        "layers": layers,
        "qa_format": qa_format,
        "max_question_tokens": max_question,
        "tokenizer": "tokenizer.json",
        "untrained_heads": untrained,
        "special_tokens": {
            "cls": special_id(vocab, ["[CLS]", "<s>"], "CLS"),
            "sep": special_id(vocab, ["[SEP]", "</s>"], "SEP"),
            "pad": special_id(vocab, ["[PAD]", "<pad>"], "padding"),
            "paragraph": special_id(vocab, [args.paragraph_token], "paragraph"),
        },
    }
    if architecture == "etc":
        config["etc"] = {"radius": args.etc_radius, "relative_clip": args.etc_relative_clip,
                         "positions": args.etc_positions, "max_segments": args.etc_max_segments,
                         "hard_g2l_mask": args.etc_hard_g2l_mask}
        if args.etc_positions != "none":
            config["max_position_embeddings"] = max_positions
    else:
        config["max_position_embeddings"] = max_positions
        config["window_tokens"] = window
        config["stride_tokens"] = stride
        config["num_clusters"] = num_clusters
        # The type head reads the max of the window CLS states (docs/model-format.md).
        config["answer_type_pooling"] = "max"

    os.makedirs(args.out_dir, exist_ok=True)
    save_file(weights, os.path.join(args.out_dir, "model.safetensors"))
    with open(os.path.join(args.out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    shutil.copyfile(tokenizer_path, os.path.join(args.out_dir, "tokenizer.json"))
    print(f"wrote {args.out_dir}: {architecture}, layers {layers}, qa_format {qa_format}, "
          f"{len(weights)} tensors"
          + (f"; untrained heads: {', '.join(untrained)}" if untrained else ""))
    if num_clusters:
        print("cluster layers need centroids from a corpus of your documents:\n"
              f"  longqa-centroids --model_dir {args.out_dir} --corpus CORPUS.jsonl")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("hf_dir")
    p.add_argument("out_dir")
    p.add_argument("--architecture", choices=["cluster_former", "etc"], default="cluster_former")
    p.add_argument("--layers", default="", help="layer plan, one letter a layer (default all S/E)")
    # A cluster's rows should fit in one chunk of m rows, or far paragraphs' rows meet in no chunk:
    # 256 keeps the mean cluster under a chunk up to 57k tokens with m 224 (docs/demo-model.md,
    # session 53).
    p.add_argument("--clusters", type=int, default=256,
                   help="centroids per C layer (at least the longest document's tokens / m)")
    p.add_argument("--window_tokens", type=int, default=0, help="l (default: fill the positions)")
    p.add_argument("--stride_tokens", type=int, default=0, help="m (default 7/8 of l)")
    p.add_argument("--max_question_tokens", type=int, default=64)
    p.add_argument("--paragraph_token", default="[unused0]",
                   help="vocabulary piece that starts every paragraph (the long-answer token)")
    p.add_argument("--etc_radius", type=int, default=84)
    p.add_argument("--etc_relative_clip", type=int, default=12)
    p.add_argument("--etc_positions", choices=["document", "paragraph", "none"],
                   default="document",
                   help="absolute positions an ETC lift keeps (see above)")
    p.add_argument("--etc_max_segments", type=int, default=256,
                   help="most segment (global) tokens; consecutive paragraphs merge beyond it")
    p.add_argument("--etc_hard_g2l_mask", action="store_true",
                   help="a segment token attends only to its own segment's tokens, so segment "
                        "tokens differ from the first step (docs/demo-model.md, session 21)")
    p.add_argument("--qa_format", choices=["auto", "nq", "squad"], default="auto",
                   help="window layout and decoding (see above); auto: squad for a QA "
                        "checkpoint with S layers only, else nq")
    p.add_argument("--seed", type=int, default=1, help="seed of the new heads' initialisation")
    convert(p.parse_args())


if __name__ == "__main__":
    main()
