#!/usr/bin/env python3
"""Tokenizer throughput: longqa's C++ tokenizer.json reader (longqa-tokenize --bench_seconds)
next to the Python `tokenizers` package (Rust, one thread: encode() one text at a time, as a
server tokenizes each request) on the same text, in the same run. Two texts: ordinary English
(the demo dataset's paragraphs) and the parity test's hard mixed-script lines.
Usage: .venv/bin/python bench/tokenizer_speed.py [--seconds 5] > bench/results/tokenizers_cpu.txt
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from mixed_text import mixed_lines  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers  # noqa: E402

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def english_lines(count):
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import random
    import make_dataset
    rng = random.Random(3)
    lines = []
    while len(lines) < count:
        example = make_dataset.make_example(rng, "x", 2000, False)
        lines.extend(example["paragraphs"])
    return lines[:count]


def python_mb_s(tokenizer, lines, seconds):
    total, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for line in lines:
            tokenizer.encode(line, add_special_tokens=False)
            total += len(line.encode())
    return total / (time.perf_counter() - start) / 1e6


def cpp_mb_s(path, lines_path, seconds, build):
    out = subprocess.run([os.path.join(build, "tools", "longqa-tokenize"), f"--tokenizer={path}",
                          f"--input={lines_path}", f"--bench_seconds={seconds}"],
                         check=True, capture_output=True, text=True).stdout.split()
    return float(out[out.index("MB/s") + 1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = parser.parse_args()
    work = tempfile.mkdtemp()
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    bpe.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    bpe.train_from_iterator(mixed_lines(3000, seed=7) + english_lines(3000), trainer=trainers.BpeTrainer(
        vocab_size=8000, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    bpe.save(os.path.join(work, "bpe.json"))
    unigram = Tokenizer(models.Unigram())
    unigram.pre_tokenizer = pre_tokenizers.Metaspace()
    unigram.train_from_iterator(mixed_lines(3000, seed=9) + english_lines(3000), trainer=trainers.UnigramTrainer(
        vocab_size=8000, unk_token="<unk>", special_tokens=["<s>", "<pad>", "</s>", "<unk>"]))
    unigram.save(os.path.join(work, "unigram.json"))
    tokenizers_files = {"WordPiece (all-MiniLM-L6-v2)": os.path.join(ROOT, "third_party", "minilm",
                                                                     "tokenizer.json"),
                        "byte-level BPE (trained, 8k)": os.path.join(work, "bpe.json"),
                        "Unigram (trained, 8k)": os.path.join(work, "unigram.json")}
    texts = {"English paragraphs": english_lines(2000), "mixed scripts": mixed_lines(2000)}
    print(f"# tokenizer throughput, MB/s of UTF-8 input, one thread, {args.seconds:g} s each;"
          f" `tokenizers` {__import__('tokenizers').__version__}")
    print(f"{'tokenizer':32} {'text':20} {'longqa C++':>11} {'tokenizers':>11} {'ratio':>6}")
    for name, path in tokenizers_files.items():
        reference = Tokenizer.from_file(path)
        reference.no_truncation()
        reference.no_padding()
        for text_name, lines in texts.items():
            lines_path = os.path.join(work, text_name.replace(" ", "_") + ".jsonl")
            with open(lines_path, "w") as f:
                for line in lines:
                    f.write(json.dumps(line) + "\n")
            cpp = cpp_mb_s(path, lines_path, args.seconds, args.build)
            python = python_mb_s(reference, lines, args.seconds)
            print(f"{name:32} {text_name:20} {cpp:11.2f} {python:11.2f} {cpp / python:6.2f}")


if __name__ == "__main__":
    main()
