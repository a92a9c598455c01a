#!/usr/bin/env python3
"""Per-kind accuracy of `longqa eval` predictions (official NQ format) against a gold JSONL with
"kind": long answer right (the gold paragraph; for unanswerable: no answer), answer right (also
the exact short span or yes/no), and how often each kind is answered null. Complements the NQ
P/R/F1 that `longqa eval --group_by kind` prints, which cannot score unanswerable questions.
Gold lines with a "phrasing" field add rows for seen and held-out question phrasings.

Usage: tools/demo_report.py GOLD.jsonl NAME=PREDICTIONS.json...   (prints a Markdown table)
"""
import collections
import json
import sys


def span(j):
    return (j["start_byte"], j["end_byte"]) if j and j.get("start_byte", -1) >= 0 else None


def judged(g, p):
    """(long right, answer right) of prediction p (a `longqa eval --output` entry, {} if missing)
    against gold line g."""
    p_long = span(p.get("long_answer"))
    g_long = span(g.get("long_answer"))
    p_short = [span(s) for s in p.get("short_answers", [])]
    g_short = [span(s) for s in g.get("short_answers", [])]
    long_right = p_long == g_long
    if g_long is None:
        return long_right, long_right
    if g.get("yes_no_answer", "NONE") != "NONE":
        return long_right, long_right and p.get("yes_no_answer") == g["yes_no_answer"]
    return long_right, long_right and p_short[:1] == g_short[:1]


def main():
    gold = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    print("| model | kind | n | long right | answer right | answered null |")
    print("| --- | --- | --- | --- | --- | --- |")
    for arg in sys.argv[2:]:
        name, path = arg.split("=", 1)
        preds = {p["example_id"]: p for p in json.load(open(path))["predictions"]}
        stats = collections.defaultdict(lambda: [0, 0, 0, 0])
        for g in gold:
            p = preds.get(g["example_id"], {})
            long_right, answer_right = judged(g, p)
            groups = ["all", g.get("kind", "-")]
            if "phrasing" in g:  # seen or held-out question templates (tools/make_dataset.py)
                groups.append(f"phrasing {g['phrasing']}")
            for kind in groups:
                s = stats[kind]
                s[0] += 1
                s[1] += long_right
                s[2] += answer_right
                s[3] += span(p.get("long_answer")) is None
        for kind in sorted(stats, key=lambda k: (k != "all", k.startswith("phrasing"), k)):
            n, lr, ar, null = stats[kind]
            print(f"| {name} | {kind} | {n} | {lr / n:.2f} | {ar / n:.2f} | {null / n:.2f} |")


if __name__ == "__main__":
    main()
