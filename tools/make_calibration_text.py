"""Writes a model folder's calibration.txt: text like the documents the model answers about, that
its int8 layers are calibrated on at load (docs/model-format.md, "calibration.txt"). For the demo
models: documents of tools/make_dataset.py's world, from a seed of their own (the dev sets use
22 and 23), joined into one text of paragraphs.

Usage: .venv/bin/python tools/make_calibration_text.py OUT_FILE [--seed 41] [--documents 4]
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument("--documents", type=int, default=4)
    parser.add_argument("--min_tokens", type=int, default=4000)
    parser.add_argument("--max_tokens", type=int, default=6000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, str(Path(__file__).with_name("make_dataset.py")),
                        "--out", tmp, "--seed", str(args.seed), "--train", str(args.documents),
                        "--dev", "0", "--test", "0", "--min_tokens", str(args.min_tokens),
                        "--max_tokens", str(args.max_tokens)], check=True)
        documents = [json.loads(line) for line in open(Path(tmp) / "train.jsonl")]
    text = "\n\n".join("\n\n".join(d["paragraphs"]) for d in documents) + "\n"
    Path(args.out).write_text(text)
    print(f"{args.out}: {len(documents)} documents, {len(text)} bytes")


if __name__ == "__main__":
    main()
