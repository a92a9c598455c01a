#!/usr/bin/env python3
"""Session 65: which attribute a model's one-hop nulls ask about. From `null_scores.py collect`
rows (every answer forced; margin = best - null, nulled when margin <= the threshold), per model
the one-hop questions nulled by attribute (birthplace, birth year, occupation, founding) at the
model's served threshold and at the threshold that nulls 85% of the unanswerable questions
(separation.py's), and the unanswerable questions by attribute. The attribute is read from the
question: tools/make_dataset.py's templates.

Usage: attribute_nulls.py GOLD.jsonl NAME=SCORES.json@THRESHOLD...
"""
import importlib.util
import json
import os
import re
import sys

from separation import threshold_nulling_85

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 5)
ATTRIBUTES = ("born_city", "birth_year", "occupation", "founded_org")


def question_patterns():
    spec = importlib.util.spec_from_file_location(
        "make_dataset", os.path.join(ROOT, "tools", "make_dataset.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    templates = [(a, t) for a, phrasings in tool.ONE_HOP.items() for p in phrasings for t in p]
    templates += [("established", t) for p in tool.ESTABLISHED for t in p]
    return [(a, re.compile(re.escape(t).replace(r"\{p\}", ".+").replace(r"\{o\}", ".+") + "$"))
            for a, t in templates]


def main():
    patterns = question_patterns()
    gold = {}
    for line in open(sys.argv[1]):
        row = json.loads(line)
        gold[row["example_id"]] = row
    asked = {i: next(a for a, p in patterns if p.match(row["question"]))
             for i, row in gold.items() if row["kind"] in ("one_hop", "unanswerable")}
    print("| model | threshold | one-hop served right | one-hop nulled: birthplace / year / "
          "occupation / founding | unanswerable nulled: birthplace (absent) / year / occupation "
          "/ founding / established |")
    print("| --- | --- | --- | --- | --- |")
    for arg in sys.argv[2:]:
        name, rest = arg.split("=", 1)
        path, served = rest.rsplit("@", 1)
        rows = json.load(open(path))
        bar = threshold_nulling_85(rows)
        for label, threshold in ((f"served {float(served):+.2f}", float(served)),
                                 (f"85% bar {bar:+.2f}", bar)):
            nulled, total, right = {}, {}, 0
            for r in rows:
                if r["kind"] not in ("one_hop", "unanswerable"):
                    continue
                key = (r["kind"], asked[r["id"]])
                total[key] = total.get(key, 0) + 1
                if r["best"] - r["null"] <= threshold:
                    nulled[key] = nulled.get(key, 0) + 1
                elif r["kind"] == "one_hop" and r["long_ok"]:
                    right += 1
            cell = lambda kind, attrs: " / ".join(
                f"{nulled.get((kind, a), 0)} of {total.get((kind, a), 0)}" for a in attrs)
            print(f"| {name} | {label} | {right} | {cell('one_hop', ATTRIBUTES)} | "
                  f"{cell('unanswerable', ATTRIBUTES + ('established',))} |")


if __name__ == "__main__":
    main()
