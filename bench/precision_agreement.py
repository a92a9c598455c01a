"""How often two runs of `longqa eval --output` (e.g. the same model served at --precision=fp32 and
--precision=int8) give the same answer: same answer kind (no answer, yes, no, short, long only),
same long-answer span, same short-answer span. Issue 22 ships a precision only where these agree
on >= 99% of the dev set and F1 moves by < 0.5 point (F1 from the two eval reports).

Usage: precision_agreement.py REFERENCE.json OTHER.json
"""
import json
import sys


def kind(p):
    if p["yes_no_answer"] != "NONE":
        return p["yes_no_answer"].lower()
    if p["short_answers"]:
        return "short"
    return "long_only" if p["long_answer"]["start_byte"] >= 0 else "no_answer"


def main():
    ref, other = (
        {p["example_id"]: p for p in json.load(open(path))["predictions"]} for path in sys.argv[1:3])
    assert ref.keys() == other.keys(), "the two runs answered different examples"
    same_kind = same_long = same_short = same_all = 0
    for example_id, a in ref.items():
        b = other[example_id]
        k = kind(a) == kind(b)
        long_ = a["long_answer"] == b["long_answer"]
        short = a["short_answers"] == b["short_answers"]
        same_kind += k
        same_long += long_
        same_short += short
        same_all += k and long_ and short
    n = len(ref)
    print(f"examples {n}: same kind {same_kind / n:.1%}, same long span {same_long / n:.1%}, "
          f"same short span {same_short / n:.1%}, all three {same_all / n:.1%}")


if __name__ == "__main__":
    main()
