"""bench/real_text/make_gold.py: every hand-written answer found in its frozen document, at the
byte offsets `longqa eval` scores, and a stale answer refused."""
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "bench", "real_text", "make_gold.py")


def test_every_answer_is_at_its_offsets(tmp_path):
    out = tmp_path / "real.jsonl"
    subprocess.run([sys.executable, TOOL, str(out)], check=True, capture_output=True)
    spec = json.load(open(os.path.join(ROOT, "bench", "real_text", "questions.json")))
    gold = [json.loads(line) for line in open(out)]
    assert len(gold) == len(spec) >= 20
    assert sum(bool(q.get("table")) for q in spec) >= 15
    for q, g in zip(spec, gold):
        text = "\n\n".join(g["paragraphs"]).encode()
        assert q["question"] == g["question"]
        if "long" not in q:
            assert g["long_answer"] is None and g["kind"] == "unanswerable"
            continue
        la = g["long_answer"]
        paragraph = text[la["start_byte"]:la["end_byte"]].decode()
        assert paragraph in g["paragraphs"] and q["long"] in paragraph
        # A table question's answer is a table: a paragraph of "|" rows, its kind "table".
        assert (g["kind"] == "table") == bool(q.get("table"))
        assert not q.get("table") or all(line.startswith("|") for line in paragraph.split("\n"))
        if "short" in q:
            (sa,) = g["short_answers"]
            assert la["start_byte"] <= sa["start_byte"] < sa["end_byte"] <= la["end_byte"]
            assert text[sa["start_byte"]:sa["end_byte"]].decode() == q["short"]
        else:
            assert g["yes_no_answer"] == q["yes_no"] and g["short_answers"] == []


def test_a_stale_answer_is_refused(tmp_path):
    copy = tmp_path / "real_text"
    shutil.copytree(os.path.dirname(TOOL), copy)
    spec = json.load(open(copy / "questions.json"))
    spec[0]["short"] = "a phrase the README never says"
    json.dump(spec, open(copy / "questions.json", "w"))
    run = subprocess.run([sys.executable, str(copy / "make_gold.py"), str(tmp_path / "x.jsonl")],
                         capture_output=True, text=True)
    assert run.returncode != 0 and "is not in its paragraph" in run.stderr
