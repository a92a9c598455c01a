#!/usr/bin/env python3
"""Which score should decide "no answer"? Session 48's analysis of the continued Cluster-Former.

collect: asks a running longqa-server every question of a gold JSONL with every answer forced
(null_threshold -1000, `longqa ask --json`) and keeps per example the answer-type logits, the long
answer's paragraph score and the best short span's score, and whether the paragraph and the span
are the gold ones.
report: for each candidate null score (the server's rule: the best non-null type logit minus the
NO_ANSWER logit; the long answer's paragraph score; the two added), the cut that maximises long +
short F1 on DEV (what `longqa eval --calibrate_null` maximises; official NQ counting: a long
answer is right when its paragraph is the gold one, a short one when its span is a gold span or
its yes/no the gold one), then that same cut applied to TEST, with per-kind figures.

Usage: null_scores.py collect PORT GOLD.jsonl OUT.json
       null_scores.py report DEV.json TEST.json
"""
import json
import subprocess
import sys


def collect(port, gold_path, out_path):
    rows = []
    for line in open(gold_path):
        g = json.loads(line)
        doc = "\n\n".join(g["paragraphs"])  # the paragraph separator `longqa ask` splits on
        r = subprocess.run(
            ["build/client/longqa", "ask", f"--target=127.0.0.1:{port}", "--question",
             g["question"], "--null_threshold=-1000", "--json", "--timeout_s=600"],
            input=doc.encode(), capture_output=True, check=True)
        a = json.loads(r.stdout)
        gold_long = g["long_answer"]["start_byte"] if g.get("long_answer") else -1
        gold_short = [(s["start_byte"], s["end_byte"]) for s in g.get("short_answers", [])]
        la, sa = a.get("long_answer", {}), a.get("short_answers", [])
        yes_no = a["answer_type"] if a["answer_type"] in ("YES", "NO") else "NONE"
        rows.append({
            "id": g["example_id"], "kind": g["kind"], "type": a["answer_type"],
            "best": a["best_answer_score"], "null": a["no_answer_score"],
            "long_score": la.get("score"), "short_score": sa[0]["score"] if sa else None,
            "long_ok": la.get("byte_begin", -2) == gold_long,
            "short_ok": (bool(sa) and (sa[0]["byte_begin"], sa[0]["byte_end"]) in gold_short)
            or (yes_no != "NONE" and yes_no == g.get("yes_no_answer")),
        })
        print(len(rows), g["kind"], rows[-1]["long_ok"], file=sys.stderr, flush=True)
    json.dump(rows, open(out_path, "w"), indent=1)


SCORES = {
    "type margin (the server's rule)": lambda r: r["best"] - r["null"],
    "long answer score": lambda r: r["long_score"],
    "type margin + long answer score": lambda r: r["best"] - r["null"] + r["long_score"],
}


def f1(right, answered, gold):
    p = right / answered if answered else 0.0
    r = right / gold if gold else 0.0
    return 2 * p * r / (p + r) if p + r else 0.0


def nq_f1(rows, score, cut, key):
    """Long (key "long_ok") or short ("short_ok") F1 of rows with those below `cut` nulled."""
    answered = [r for r in rows if score(r) >= cut]
    right = sum(r[key] and r["kind"] != "unanswerable" for r in answered)
    return f1(right, len(answered), sum(r["kind"] != "unanswerable" for r in rows))


def report(dev_path, test_path):
    dev, test = json.load(open(dev_path)), json.load(open(test_path))
    kinds = sorted({r["kind"] for r in test})
    print("| null score | cut (chosen on dev) | dev long F1 | test long / short F1 | "
          + " | ".join(f"test {k}" for k in kinds) + " |")
    print("| --- | --- | --- | --- | " + " | ".join("---" for _ in kinds) + " |")
    for name, score in SCORES.items():
        cut = max(sorted({score(r) for r in dev}),
                  key=lambda c: nq_f1(dev, score, c, "long_ok") + nq_f1(dev, score, c, "short_ok"))
        cells = []
        for k in kinds:
            rows = [r for r in test if r["kind"] == k]
            if k == "unanswerable":
                cells.append(f"nulled {sum(score(r) < cut for r in rows)}/{len(rows)}")
            else:
                cells.append(f"{nq_f1(rows, score, cut, 'long_ok'):.2f} / "
                             f"{nq_f1(rows, score, cut, 'short_ok'):.2f}")
        print(f"| {name} | {cut:.3f} | {nq_f1(dev, score, cut, 'long_ok'):.3f} | "
              f"{nq_f1(test, score, cut, 'long_ok'):.3f} / {nq_f1(test, score, cut, 'short_ok'):.3f} | "
              + " | ".join(cells) + " |")
    for k in kinds:
        if k != "unanswerable":
            rows = [r for r in test if r["kind"] == k]
            print(f"test {k}, every question answered: long right {sum(r['long_ok'] for r in rows)}"
                  f"/{len(rows)}, short right {sum(r['short_ok'] for r in rows)}/{len(rows)}")


if __name__ == "__main__":
    if sys.argv[1] == "collect":
        collect(*sys.argv[2:5])
    else:
        report(*sys.argv[2:4])
