#!/usr/bin/env python3
"""Two baselines a two-hop answer must beat, per example of tools/make_dataset.py's format.

any city: the long answer is some paragraph stating a city's country (1 / such paragraphs).
any birth city: the model links a birth paragraph's city to its country paragraph but ignores
WHOSE birth the question asks about (1 / distinct birth cities that have a country paragraph).
Usage: two_hop_drill_chance.py DATASET.jsonl...
"""
import json
import re
import sys

CITY = re.compile(r"^(\w+)(?: is a city in | is one of the larger towns of |, a city in )")
CITY_LATE = re.compile(r"residents, (\w+) is one of the larger towns of ")
BIRTH = [re.compile(p) for p in (r"^\w+ \w+ was born in (\w+) in \d+\.", r"^Born in (\w+) in \d+, ",
                                 r"^\w+ \w+ \(born \d+ in (\w+)\)",
                                 r"^The records of (\w+) show that \w+ \w+ was born there")]


def cities_of(paragraph):
    m = CITY.search(paragraph) or CITY_LATE.search(paragraph)
    return m.group(1) if m else None


for path in sys.argv[1:]:
    any_city, any_birth = [], []
    for line in open(path, encoding="utf-8"):
        example = json.loads(line)
        if example["kind"] != "two_hop":
            continue
        stated = {c for c in map(cities_of, example["paragraphs"]) if c}
        born = {m.group(1) for p in example["paragraphs"] for r in BIRTH for m in [r.search(p)] if m}
        any_city.append(1.0 / len(stated))
        any_birth.append(1.0 / max(1, len(born & stated)))
    n = len(any_city)
    print(f"{path}: {n} two-hop; chance long right: any city {sum(any_city) / n:.2f}, "
          f"any birth city {sum(any_birth) / n:.2f}")
