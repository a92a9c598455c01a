"""Picks a model folder's checks.jsonl (tests/integration/demo_model_test.cc): for each wanted kind,
the shortest gold examples that the model's served predictions (`longqa eval --output`) answer
right as tools/demo_report.py's "answer right" judges it (the gold paragraph, and its short span,
yes/no, or no answer), ids prefixed by the gold file's folder so that two sets' "dev-0" stay
apart. A guard against a path that stops computing what the model learned, not a measure of it.

Usage: make_checks.py OUT.jsonl GOLD.jsonl:PREDICTIONS.json:KIND=N[,KIND=N...] ...
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../../tools"))
from demo_report import judged  # noqa: E402  (tools/demo_report.py: the per-kind table's judge)


def main():
    out, picked = sys.argv[1], []
    for arg in sys.argv[2:]:
        gold_path, pred_path, wants = arg.split(":")
        want = {k: int(n) for k, n in (w.split("=") for w in wants.split(","))}
        preds = {p["example_id"]: p for p in json.load(open(pred_path))["predictions"]}
        golds = [json.loads(line) for line in open(gold_path)]
        golds.sort(key=lambda g: sum(len(p) for p in g["paragraphs"]))
        for kind, n in want.items():
            right = [g for g in golds if g["kind"] == kind and judged(g, preds[g["example_id"]])[1]]
            assert len(right) >= n, f"{gold_path}: {len(right)} {kind} examples right, {n} wanted"
            for g in right[:n]:
                g.pop("supporting", None)
                g["example_id"] = os.path.basename(os.path.dirname(gold_path)) + "/" + g["example_id"]
                picked.append(g)
                print(f"{gold_path} {g['example_id']} {kind}: {g['question']}")
    with open(out, "w") as f:
        for g in picked:
            f.write(json.dumps(g) + "\n")


if __name__ == "__main__":
    main()
