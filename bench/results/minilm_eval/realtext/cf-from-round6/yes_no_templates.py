#!/usr/bin/env python3
"""Yes/no questions answered right, by question template: which phrasings a model's yes/no
decision fails on. The template is the question with every capitalised word after the first (the
generator's names) written X, so "Is Bade the birthplace of Rodfi Munwi?" is "Is X the birthplace
of X X?".

Usage: yes_no_templates.py GOLD.jsonl NAME=PREDICTIONS.json...
Prints a Markdown table: template, phrasing (seen / heldout), questions, then for each model the
questions whose yes_no_answer is right and, in brackets, those answered with a span instead
(yes_no_answer NONE with a long answer).
"""
import collections
import json
import sys


def template(question):
    words = question.split()
    return " ".join([words[0]] + ["X" if w[:1].isupper() else w for w in words[1:]])


def main():
    gold = {}
    for line in open(sys.argv[1]):
        row = json.loads(line)
        if row["kind"] == "yes_no":
            gold[row["example_id"]] = row
    names, counts = [], collections.defaultdict(collections.Counter)
    for spec in sys.argv[2:]:
        name, path = spec.split("=", 1)
        names.append(name)
        for pred in json.load(open(path))["predictions"]:
            row = gold.get(pred["example_id"])
            if row is None:
                continue
            key = (template(row["question"]), row["phrasing"])
            counts[key]["total " + name] += 1
            counts[key]["right " + name] += pred["yes_no_answer"] == row["yes_no_answer"]
            span = pred["yes_no_answer"] == "NONE" and pred["long_answer"]["start_byte"] >= 0
            counts[key]["span " + name] += span
    print("| template | phrasing | questions | " + " | ".join(names) + " |")
    print("| --- | --- | --- |" + " --- |" * len(names))
    for key in sorted(counts):
        c = counts[key]
        cells = [f"{c['right ' + n]} ({c['span ' + n]})" for n in names]
        print(f"| {key[0]} | {key[1]} | {c['total ' + names[0]]} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
