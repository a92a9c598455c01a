#!/usr/bin/env python3
"""Two-hop chance: how many paragraphs of each two-hop example state a city's country.

A model that has learned only "the long answer is some city's paragraph" gets 1/that right.
Usage: two_hop_chance.py DATASET.jsonl...   (tools/make_dataset.py's format)
"""
import json
import re
import sys

CITY = re.compile(r" is a city in | is one of the larger towns of |, a city in ")

for path in sys.argv[1:]:
    counts = []
    for line in open(path, encoding="utf-8"):
        example = json.loads(line)
        if example["kind"] == "two_hop":
            counts.append(sum(1 for p in example["paragraphs"] if CITY.search(p)))
    counts.sort()
    chance = sum(1.0 / c for c in counts) / len(counts)
    print(f"{path}: {len(counts)} two-hop, city paragraphs median {counts[len(counts) // 2]} "
          f"(min {counts[0]}, max {counts[-1]}), chance long right {chance:.2f}")
