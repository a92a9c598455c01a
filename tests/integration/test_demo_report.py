"""tools/demo_report.py: per-kind and per-phrasing accuracy and null rate, counted by hand."""
import json
import os
import subprocess
import sys

SOURCE = os.environ.get("LONGQA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def span(begin, end):
    return {"start_byte": begin, "end_byte": end}


def test_rows_count_right_answers_and_nulls_per_kind_and_phrasing(tmp_path):
    gold = [
        {"example_id": "a", "kind": "one_hop", "phrasing": "seen", "long_answer": span(0, 10),
         "short_answers": [span(2, 4)], "yes_no_answer": "NONE"},
        {"example_id": "b", "kind": "one_hop", "phrasing": "heldout", "long_answer": span(20, 30),
         "short_answers": [span(21, 22)], "yes_no_answer": "NONE"},
        {"example_id": "c", "kind": "unanswerable", "phrasing": "seen", "long_answer": None,
         "short_answers": [], "yes_no_answer": "NONE"},
    ]
    null = span(-1, -1)
    predictions = {"predictions": [
        {"example_id": "a", "long_answer": span(0, 10), "short_answers": [span(2, 4)],
         "yes_no_answer": "NONE"},                                   # all right
        {"example_id": "b", "long_answer": span(20, 30), "short_answers": [span(25, 26)],
         "yes_no_answer": "NONE"},                                   # long right, span wrong
        {"example_id": "c", "long_answer": null, "short_answers": [], "yes_no_answer": "NONE"},
    ]}
    (tmp_path / "gold.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gold))
    (tmp_path / "p.json").write_text(json.dumps(predictions))
    out = subprocess.run([sys.executable, os.path.join(SOURCE, "tools", "demo_report.py"),
                          str(tmp_path / "gold.jsonl"), f"m={tmp_path / 'p.json'}"],
                         check=True, capture_output=True, text=True).stdout
    rows = {line.split(" | ")[1]: line for line in out.splitlines() if line.startswith("| m |")}
    assert rows["all"] == "| m | all | 3 | 1.00 | 0.67 | 0.33 |"
    assert rows["one_hop"] == "| m | one_hop | 2 | 1.00 | 0.50 | 0.00 |"
    assert rows["unanswerable"] == "| m | unanswerable | 1 | 1.00 | 1.00 | 1.00 |"
    assert rows["phrasing seen"] == "| m | phrasing seen | 2 | 1.00 | 1.00 | 0.50 |"
    assert rows["phrasing heldout"] == "| m | phrasing heldout | 1 | 1.00 | 0.00 | 0.00 |"
