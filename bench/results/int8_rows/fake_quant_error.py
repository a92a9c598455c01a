"""What int8 activations cost models/demo, simulated in fp32 (fake quantisation), per tensor
against per row (issue 22: int8 answers must match fp32's).

The model's windows as the server builds them (a question, 256 context tokens, stride 224) from
the first 8 examples of the 2k-8k-token dev set (bench/precision_answers.sh makes it), run through
a plain PyTorch BERT (MiniLM dims) with every Linear layer's weight rounded to s8 per output row
and its input to u8 (8 bits, or 7 as on CPUs without VNNI) either with one range for the whole
input or one per row, against the same model in fp32. Prints how much wider the widest input row
of each Linear layer is than the median row, then the final states' relative error, the span
logits' error and how often each window's best start and end stay the same.
Usage (repository root): .venv/bin/python bench/results/int8_rows/fake_quant_error.py
"""
import json
import math

import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer

W = {k: v.float() for k, v in load_file("models/demo/model.safetensors").items()}
tok = Tokenizer.from_file("models/demo/tokenizer.json")
tok.no_truncation()
tok.no_padding()
examples = [json.loads(line) for line in open("build/minilm-train/data/mid/dev.jsonl")][:8]
windows = []
for e in examples:
    q = tok.encode(e["question"], add_special_tokens=False).ids[:30]
    c = tok.encode("\n\n".join(e["paragraphs"]), add_special_tokens=False).ids
    for s in range(0, min(len(c), 224 * 8), 224):
        ids = [101] + q + [102] + c[s:s + 256] + [102]
        windows.append((ids, [0] * (len(q) + 2) + [1] * (len(ids) - len(q) - 2)))
L = max(len(i) for i, _ in windows)
ids = torch.zeros(len(windows), L, dtype=torch.long)
types = torch.zeros_like(ids)
mask = torch.zeros(len(windows), L)
for n, (i, t) in enumerate(windows):
    ids[n, :len(i)] = torch.tensor(i)
    types[n, :len(t)] = torch.tensor(t)
    mask[n, :len(i)] = 1


def layer_norm(x, p):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), W[p + ".weight"], W[p + ".bias"], 1e-12)


def fake_u8(x, bits, per_row):
    """u8 with a range holding 0 (PyTorch's dynamic quantisation), over x or over each row."""
    top = 2 ** bits - 1
    if per_row:
        lo, hi = x.amin(-1, keepdim=True).clamp(max=0), x.amax(-1, keepdim=True).clamp(min=0)
    else:
        lo, hi = x.min().clamp(max=0), x.max().clamp(min=0)
    scale = (hi - lo).clamp(min=1e-12) / top
    zero = torch.round(-lo / scale)
    return (torch.clamp(torch.round(x / scale) + zero, 0, top) - zero) * scale


def fake_s8_rows(w):
    scale = w.abs().amax(1, keepdim=True).clamp(min=1e-12) / 127
    return torch.round(w / scale).clamp(-127, 127) * scale


ROW_RANGES = {}  # layer kind: [widest row's range / median row's range, a layer each] (fp32 run)


def forward(mode):
    """mode: None (fp32) or (bits, per_row, set of layer kinds kept fp32)."""
    def linear(x, p, kind):
        w, b = W[p + ".weight"], W[p + ".bias"]
        if mode is None:
            r = (x.amax(-1) - x.amin(-1))[mask.bool()]
            ROW_RANGES.setdefault(kind, []).append((r.max() / r.median()).item())
        if mode is None or kind in mode[2]:
            return x @ w.t() + b
        return fake_u8(x, mode[0], mode[1]) @ fake_s8_rows(w).t() + b

    x = (W["embeddings.word_embeddings.weight"][ids] + W["embeddings.position_embeddings.weight"][:L]
         + W["embeddings.token_type_embeddings.weight"][types])
    x = layer_norm(x, "embeddings.LayerNorm")
    n, h, dh = x.shape[0], 12, 32
    bias = (1 - mask)[:, None, None, :] * -1e9
    for i in range(6):
        p = f"encoder.layer.{i}."
        q, k, v = (linear(x, p + "attention.self." + part, "qkv").view(n, L, h, dh).transpose(1, 2)
                   for part in ("query", "key", "value"))
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh) + bias, -1) @ v
        a = a.transpose(1, 2).reshape(n, L, h * dh)
        x = layer_norm(x + linear(a, p + "attention.output.dense", "out"),
                       p + "attention.output.LayerNorm")
        f = torch.nn.functional.gelu(linear(x, p + "intermediate.dense", "ffn1"))
        x = layer_norm(x + linear(f, p + "output.dense", "ffn2"), p + "output.LayerNorm")
    return x, x @ W["qa_outputs.weight"].t() + W["qa_outputs.bias"]


ref_x, ref_span = forward(None)
valid = mask.bool()
print(f"{len(windows)} windows of up to {L} tokens")
for kind, ratios in ROW_RANGES.items():  # q, k and v read the same input: one of the three
    ratios = ratios[::3] if kind == "qkv" else ratios
    print(f"inputs of {kind:4s}: widest row's range / median row's, layers 0-5: "
          + " ".join(f"{r:.1f}" for r in ratios))
for bits in (8, 7):
    for per_row in (False, True):
        for kept in ((), ("ffn2",)):
            x, span = forward((bits, per_row, set(kept)))
            err = ((x - ref_x)[valid].norm() / ref_x[valid].norm()).item()
            span_err = (span - ref_span)[valid].abs()
            got = span.masked_fill(~valid[..., None], -1e9).argmax(1)
            want = ref_span.masked_fill(~valid[..., None], -1e9).argmax(1)
            same = (got == want).float().mean().item()
            name = f"{bits}-bit, {'per row' if per_row else 'per tensor'}" + (
                f", {'+'.join(kept)} in fp32" if kept else "")
            print(f"{name:32s} states rel. error {err:.4f}  span logits |error| mean "
                  f"{span_err.mean():.4f} max {span_err.max():.3f}  same best start/end {same:.3f}")
