#!/usr/bin/env python3
"""Session 54: how well a model's NO_ANSWER separates one-hop from unanswerable questions on the
test split, whatever its threshold: from `null_scores.py collect` rows (every answer forced), the
one-hop questions served right when the threshold nulls at least 85% of the unanswerable ones
(issue 13's bar), by phrasing, and the median one-hop margin (answer score minus NO_ANSWER's).

Usage: separation.py GOLD.jsonl NAME=SCORES.json...
"""
import json
import statistics
import sys


def threshold_nulling_85(rows):
    """The lowest threshold that nulls 85% of the unanswerable rows (a question is nulled when its
    margin <= threshold): the ceil(0.85 n)-th smallest margin."""
    unanswerable = sorted(r["best"] - r["null"] for r in rows if r["kind"] == "unanswerable")
    return unanswerable[(len(unanswerable) * 85 + 99) // 100 - 1]


def main():
    gold = {}
    for line in open(sys.argv[1]):
        row = json.loads(line)
        gold[row["example_id"]] = row
    print("| model | threshold nulling 85% of unanswerable | one-hop served right, seen / held-out "
          "phrasings | one-hop median margin, seen / held-out |")
    print("| --- | --- | --- | --- |")
    for arg in sys.argv[2:]:
        name, path = arg.split("=", 1)
        rows = json.load(open(path))
        threshold = threshold_nulling_85(rows)
        cells, medians = [], []
        for phrasing in ("seen", "heldout"):
            one_hop = [r for r in rows if r["kind"] == "one_hop"
                       and gold[r["id"]].get("phrasing", "seen") == phrasing]
            right = sum(1 for r in one_hop if r["long_ok"] and r["best"] - r["null"] > threshold)
            cells.append(f"{right} of {len(one_hop)}")
            medians.append(f"{statistics.median(r['best'] - r['null'] for r in one_hop):+.1f}")
        print(f"| {name} | {threshold:+.2f} | {' / '.join(cells)} | {' / '.join(medians)} |")


if __name__ == "__main__":
    main()
