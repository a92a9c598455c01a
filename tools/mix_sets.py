#!/usr/bin/env python3
"""A training mix (or a calibration set) from rows of gold sets: each set's rows first..last,
their example ids prefixed so that they stay unique across sets, shuffled by a seed (or kept in
order without one). The training scripts (tools/train_minilm_realtext.sh,
tools/train_minilm_tables.sh) name in each round's mix the rows no earlier round took.

Usage: tools/mix_sets.py DATA OUT [--seed N] SET:PREFIX:FIRST:LAST...
  DATA     the folder the sets lie in; OUT is written there (folders made)
  SET      a gold file under DATA without ".jsonl" (man/train); FIRST and LAST: Python slice
           bounds (LAST empty: to the end)
"""
import argparse
import json
import os
import random


def rows_of(data, spec):
    split, prefix, first, last = spec.split(":")
    rows = []
    lines = open(os.path.join(data, f"{split}.jsonl")).readlines()
    for line in lines[int(first or 0):int(last) if last else None]:
        gold = json.loads(line)
        gold["example_id"] = prefix + gold["example_id"]
        rows.append(json.dumps(gold) + "\n")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data")
    parser.add_argument("out")
    parser.add_argument("--seed", type=int)
    parser.add_argument("sets", nargs="+")
    args = parser.parse_args()
    rows = [row for spec in args.sets for row in rows_of(args.data, spec)]
    if args.seed is not None:
        random.Random(args.seed).shuffle(rows)
    out = os.path.join(args.data, args.out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    open(out, "w").writelines(rows)


if __name__ == "__main__":
    main()
