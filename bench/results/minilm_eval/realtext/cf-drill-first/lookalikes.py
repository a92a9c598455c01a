#!/usr/bin/env python3
"""Session 68: are the Cluster-Former's one-hop misses on the test split about people with a
look-alike in the same document? For each one-hop question, the largest number of name pieces
(make_dataset.py's syllables, two a word) its subject shares with another person named in the
document; then, per model (`null_scores.py collect` rows, every answer forced), the forced
paragraphs that are wrong, the median margin (answer score minus NO_ANSWER's) and how many
margins fall at or below MARGIN (default +14: the dev thresholds of sessions 66-67), split by
look-alike (3 or 4 pieces shared, what `--similar_names` trains on) or not.

Usage: lookalikes.py GOLD.jsonl NAME=SCORES.json...   (env MARGIN)
"""
import collections
import json
import os
import re
import statistics
import sys

sys.path.insert(0, "tools")
import make_dataset as md  # noqa: E402

PIECES = sorted(set(md.SYLLABLES) | set(md.HELDOUT_SYLLABLES), key=len, reverse=True)
TWO_WORDS = re.compile(r"\b([A-Z][a-z]+) ([A-Z][a-z]+)\b")


def word_pieces(word):
    """A name word's two pieces, or None where the word is not made of two of them."""
    w = word.lower()
    for first in PIECES:
        if w.startswith(first) and w[len(first):] in PIECES:
            return [first, w[len(first):]]
    return None


def people(text):
    """Every two-word name made of pieces in text, with its four pieces."""
    found = {}
    for a, b in TWO_WORDS.findall(text):
        pa, pb = word_pieces(a), word_pieces(b)
        if pa and pb:
            found[f"{a} {b}"] = pa + pb
    return found


def shared(x, y):
    return sum((collections.Counter(x) & collections.Counter(y)).values())


def main():
    margin_bar = float(os.environ.get("MARGIN", "14"))
    rows = []
    for line in open(sys.argv[1]):
        g = json.loads(line)
        if g["kind"] != "one_hop":
            continue
        names = people(" ".join(g["paragraphs"]))
        subject = next(n for n in names if n in g["question"])
        most = max((shared(names[subject], v) for n, v in names.items() if n != subject),
                   default=0)
        rows.append((g["example_id"], most >= 3))
    print(f"one-hop questions {len(rows)}, with a look-alike (3 or 4 pieces shared) "
          f"{sum(r[1] for r in rows)}\n")
    print("| model | subject | n | forced paragraph wrong | median margin | "
          f"margins <= {margin_bar:+g} |")
    print("| --- | --- | --- | --- | --- | --- |")
    for arg in sys.argv[2:]:
        name, path = arg.split("=", 1)
        scores = {r["id"]: r for r in json.load(open(path))}
        for label, want in (("look-alike", True), ("no look-alike", False)):
            picked = [scores[i] for i, alike in rows if alike == want]
            margins = [r["best"] - r["null"] for r in picked]
            print(f"| {name} | {label} | {len(picked)} | {sum(not r['long_ok'] for r in picked)} | "
                  f"{statistics.median(margins):+.1f} | {sum(m <= margin_bar for m in margins)} |")


if __name__ == "__main__":
    main()
