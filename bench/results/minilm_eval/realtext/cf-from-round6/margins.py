#!/usr/bin/env python3
"""What the served threshold does to each kind and phrasing: from `null_scores.py collect`'s rows
(every answer forced; `best` is the served answer score, type+long here, `null` the NO_ANSWER
logit), per kind and phrasing the questions, the forced paragraphs and spans right, and the margins
(best - null); then, for thresholds around the served one, one-hop paragraphs served right and
unanswerable questions nulled (a question is nulled when its margin <= the threshold); last (since
session 73), the one-hop questions nulled at the served threshold, with their margins and whether
the forced paragraph is right, and the margins of the unanswerable questions answered.

Usage: margins.py GOLD.jsonl SCORES.json THRESHOLD
"""
import json
import sys


def main():
    gold = {}
    for line in open(sys.argv[1]):
        row = json.loads(line)
        gold[row["example_id"]] = row
    rows = json.load(open(sys.argv[2]))
    served = float(sys.argv[3])
    groups = {}
    for r in rows:
        key = (r["kind"], gold[r["id"]].get("phrasing", "seen"))  # dev splits: seen only
        groups.setdefault(key, []).append((r["best"] - r["null"], r["long_ok"], r["short_ok"]))
    margin = {r["id"]: r["best"] - r["null"] for r in rows}
    print("| kind | phrasing | n | forced long right | forced short right | nulled at "
          f"{served:g} | margins, lowest five |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for (kind, phrasing), v in sorted(groups.items()):
        v.sort()
        low = ", ".join(f"{m:.1f}" for m, _, _ in v[:5])
        print(f"| {kind} | {phrasing} | {len(v)} | {sum(x[1] for x in v)} | "
              f"{sum(x[2] for x in v)} | {sum(1 for x in v if x[0] <= served)} | {low} |")
    one_hop = [x for (kind, _), v in groups.items() if kind == "one_hop" for x in v]
    unanswerable = [x for (kind, _), v in groups.items() if kind == "unanswerable" for x in v]
    two_hop = [x for (kind, _), v in groups.items() if kind == "two_hop" for x in v]
    print()
    print("| threshold | one-hop long right, served | two-hop answered (long right) | "
          "unanswerable nulled |")
    print("| --- | --- | --- | --- |")
    for t in sorted({4.0, 6.0, 7.0, 8.0, served, 10.0}):
        right = sum(1 for m, ok, _ in one_hop if m > t and ok)
        answered = sum(1 for m, _, _ in two_hop if m > t)
        two_right = sum(1 for m, ok, _ in two_hop if m > t and ok)
        nulled = sum(1 for m, _, _ in unanswerable if m <= t)
        print(f"| {t:g} | {right} of {len(one_hop)} | {answered} of {len(two_hop)} ({two_right}) | "
              f"{nulled} of {len(unanswerable)} |")
    print()
    print(f"| one-hop nulled at {served:g}: margin | forced long right | phrasing | question |")
    print("| --- | --- | --- | --- |")
    for r in sorted(rows, key=lambda r: margin[r["id"]]):
        g = gold[r["id"]]
        if r["kind"] == "one_hop" and margin[r["id"]] <= served:
            print(f"| {margin[r['id']]:.1f} | {'yes' if r['long_ok'] else 'no'} | "
                  f"{g.get('phrasing', 'seen')} | {g['question']} |")
    answered = [f"{m:.1f}" for m in sorted(m for m, _, _ in unanswerable if m > served)]
    print()
    print(f"unanswerable answered at {served:g}, margins: {', '.join(answered) or 'none'}")


if __name__ == "__main__":
    main()
