"""Hugging Face's long-document encoders on the documents longqa-encoder-bench runs: Longformer
(sliding window of 512, the 20 question tokens global, as its QA setup), BigBird (block-sparse
attention, blocks of 64, 3 random blocks) and BERT with full attention over question + document.
Same dims as longqa's bench (d 768, 12 heads, FFN 3072, 12 layers, random weights), the given
threads, one document a call. Prints rows as ort_bench.py does: name, context tokens, windows
(1: the whole document is one sequence), seconds, tokens/s (context tokens / s).

Runs in the test venv (.venv: Debian's torch, transformers from PyPI). Usage:
  hf_bench.py [--tokens 1024,2048,...] [--threads 2] [--full_max 8192] [--layers 12]
BERT's full attention needs (question + tokens)^2 scores a head: --full_max caps its lengths.
"""
import argparse
import time

import torch
from transformers import (BertConfig, BertModel, BigBirdConfig, BigBirdModel, LongformerConfig,
                          LongformerModel)

QUESTION = 20
DIMS = dict(vocab_size=8000, hidden_size=768, num_attention_heads=12, intermediate_size=3072)


def models(max_tokens, full_max, layers):
    positions = QUESTION + max_tokens + 2
    longformer = LongformerModel(LongformerConfig(
        **DIMS, num_hidden_layers=layers, attention_window=512,
        max_position_embeddings=positions + 512 + 2), add_pooling_layer=False)
    bigbird = BigBirdModel(BigBirdConfig(
        **DIMS, num_hidden_layers=layers, attention_type="block_sparse", block_size=64,
        num_random_blocks=3, max_position_embeddings=positions + 64), add_pooling_layer=False)
    bert = BertModel(BertConfig(**DIMS, num_hidden_layers=layers,
                                max_position_embeddings=QUESTION + full_max + 2),
                     add_pooling_layer=False)
    return [("hf-longformer", longformer, max_tokens), ("hf-bigbird", bigbird, max_tokens),
            ("hf-bert-full", bert, full_max)]


def run(name, model, tokens):
    ids = torch.randint(5, 7000, (1, QUESTION + tokens))
    kwargs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if name == "hf-longformer":  # the question tokens attend to and from everything
        glob = torch.zeros_like(ids)
        glob[:, :QUESTION] = 1
        kwargs["global_attention_mask"] = glob
    start = time.perf_counter()
    model(**kwargs)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", default="1024,2048,4096,8192,16384,32768")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--full_max", type=int, default=8192)
    parser.add_argument("--layers", type=int, default=12)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    lengths = [int(t) for t in args.tokens.split(",")]
    print(f"transformers peers: torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"one document a call", flush=True)
    with torch.inference_mode():
        for name, model, longest in models(max(lengths), args.full_max, args.layers):
            model.eval()
            run(name, model, lengths[0])  # warm-up
            for tokens in (t for t in lengths if t <= longest):
                s = run(name, model, tokens)
                print(f"{name:18} {tokens:8d} {1:8d} {s:10.3f} {tokens / s:12.0f}", flush=True)


if __name__ == "__main__":
    main()
