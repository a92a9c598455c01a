"""ONNX Runtime on the windows longqa runs: a document of N context tokens becomes the same windows
as longqa-encoder-bench makes (a 20-token question + 256 context tokens, stride 224: 37 windows of
276 tokens at 8,192 tokens), run `--batch` windows a call. Prints tokens/s (context tokens / s, as
longqa counts them) for fp32 after ONNX Runtime's BERT optimizer (fused attention, LayerNorm, GELU)
and for its dynamic int8 quantisation of that graph.

Runs in the ONNX Runtime venv (bench/cpu_peers.sh makes it). Usage:
  ort_bench.py BERT.onnx [--tokens 8192,32768] [--threads 2] [--batch 8]
"""
import argparse
import os
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import QuantType, quantize_dynamic
from onnxruntime.transformers import optimizer

QUESTION, WINDOW, STRIDE = 20, 256, 224


def num_windows(tokens):
    return 1 if tokens <= WINDOW else 1 + (tokens - WINDOW + STRIDE - 1) // STRIDE


def session(path, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def seconds_for(sess, tokens, batch):
    windows = num_windows(tokens)
    seq = QUESTION + min(WINDOW, tokens)
    rng = np.random.default_rng(1)
    ids = rng.integers(5, 7000, size=(windows, seq), dtype=np.int64)
    mask = np.ones_like(ids)
    run = lambda b, e: sess.run(None, {"input_ids": ids[b:e], "attention_mask": mask[b:e]})
    run(0, min(batch, windows))  # warm-up
    start = time.perf_counter()
    for b in range(0, windows, batch):
        run(b, min(windows, b + batch))
    return windows, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("onnx")
    parser.add_argument("--tokens", default="8192")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()
    base = os.path.splitext(args.onnx)[0]
    fused, int8 = base + "-opt.onnx", base + "-opt-int8.onnx"
    if not os.path.exists(fused):
        optimizer.optimize_model(args.onnx, model_type="bert", num_heads=12, opt_level=0,
                                 hidden_size=768).save_model_to_file(fused)
    if not os.path.exists(int8):
        # The fused attention nodes are of the com.microsoft domain, which shape inference does
        # not type: their outputs are fp32.
        quantize_dynamic(fused, int8, weight_type=QuantType.QInt8,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    print(f"onnxruntime {ort.__version__}, {args.threads} threads, {args.batch} windows a call")
    for name, path in (("onnxruntime-fp32", fused), ("onnxruntime-int8", int8)):
        sess = session(path, args.threads)
        for tokens in (int(t) for t in args.tokens.split(",")):
            windows, s = seconds_for(sess, tokens, args.batch)
            print(f"{name:18} {tokens:8d} {windows:8d} {s:10.3f} {tokens / s:12.0f}", flush=True)


if __name__ == "__main__":
    main()
