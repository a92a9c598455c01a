#!/usr/bin/env python3
"""Session 66: could another answer score than the server's "type+long" rule meet issue 13's
one-hop target on the test split? Separation at the 85% no-answer bar (separation.py) counts
more one-hop questions right for some sums with the best short span's score; this asks what a cut
chosen on dev, as `longqa eval --calibrate_null` chooses it, makes of each on test. Candidates are
sums of the forced answer's scores (null_scores.py collect rows: "best" is the server's type+long
score, "null" the NO_ANSWER logit); the report is null_scores.py's.

Usage: answer_scores.py DEV_SCORES.json TEST_SCORES.json
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "../cf-from-round5/continued"))
import null_scores  # noqa: E402


def short_if_span(r):
    """The best span's score where the forced answer is a span (YES / NO answers have none)."""
    return r["short_score"] if r["type"] == "SHORT" else 0.0


null_scores.SCORES = {
    "type+long (served)": lambda r: r["best"] - r["null"],
    "type+long + short": lambda r: r["best"] + r["short_score"] - r["null"],
    "type+long + short where a span": lambda r: r["best"] + short_if_span(r) - r["null"],
    "type+long + short / 2": lambda r: r["best"] + 0.5 * r["short_score"] - r["null"],
    "long + short - 2 NO_ANSWER": lambda r: r["long_score"] + r["short_score"] - 2 * r["null"],
}

if __name__ == "__main__":
    null_scores.report(sys.argv[1], sys.argv[2])
