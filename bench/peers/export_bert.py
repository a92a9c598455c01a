"""Writes a random-weight BERT encoder (the dims of longqa-encoder-bench: d 768, 12 heads, FFN
3072, 12 layers) as ONNX, for the ONNX Runtime peer of bench/cpu_peers.sh.

Runs in the test venv (.venv: Debian's torch with numpy 1.x); ONNX Runtime itself needs numpy 2
and lives in its own venv, so export and run are two steps.

Usage: export_bert.py OUT.onnx [--layers 12]
"""
import argparse

import torch
from transformers import BertConfig, BertModel


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--layers", type=int, default=12)
    args = parser.parse_args()
    torch.manual_seed(1)
    config = BertConfig(vocab_size=8000, hidden_size=768, num_attention_heads=12,
                        intermediate_size=3072, num_hidden_layers=args.layers,
                        max_position_embeddings=512)
    model = BertModel(config, add_pooling_layer=False).eval()
    ids = torch.randint(5, 7000, (2, 276))
    mask = torch.ones_like(ids)
    with torch.no_grad():
        torch.onnx.export(model, (ids, mask), args.out, input_names=["input_ids", "attention_mask"],
                          output_names=["last_hidden_state"], opset_version=14,
                          dynamic_axes={"input_ids": {0: "batch", 1: "seq"},
                                        "attention_mask": {0: "batch", 1: "seq"},
                                        "last_hidden_state": {0: "batch", 1: "seq"}})


if __name__ == "__main__":
    main()
