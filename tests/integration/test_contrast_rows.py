"""tools/contrast_rows.py: beside each one-hop row, the same document without the answer's
sentence, unanswerable; rows whose answer stays readable are skipped."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "contrast_rows.py")


def one_hop(example_id, question, paragraphs, gold, answer):
    """A gold row in make_dataset.py's layout: byte offsets into the paragraphs joined by \\n\\n."""
    start = sum(len(p.encode()) + 2 for p in paragraphs[:gold])
    first = start + paragraphs[gold].encode().index(answer.encode())
    return {"example_id": example_id, "kind": "one_hop", "question": question,
            "paragraphs": paragraphs, "phrasing": "seen",
            "long_answer": {"start_byte": start, "end_byte": start + len(paragraphs[gold].encode())},
            "short_answers": [{"start_byte": first, "end_byte": first + len(answer.encode())}],
            "yes_no_answer": "NONE", "supporting": [{"start_byte": start, "end_byte": start + 1}]}


def contrast(tmp_path, rows, *args):
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    subprocess.run([sys.executable, TOOL, str(source), str(out), *args], check=True)
    return [json.loads(line) for line in out.read_text().splitlines()]


OCCUPATION = one_hop(
    "a", "Which occupation did Holso Kesib have?",
    ["Dorhu lies on a wide river.",
     "Born in Momun in 1885, Holso Kesib grew up near the harbour. Later, Holso worked as a poet "
     "for many years.",
     'Holso once wrote: "I have never seen a city as busy as Yogil!" Nobody knows when.'],
    1, "poet")


def test_the_answers_sentence_deleted_and_the_row_made_unanswerable(tmp_path):
    pair = contrast(tmp_path, [OCCUPATION])
    assert pair[0] == OCCUPATION  # the one-hop row itself, unchanged, first
    without = pair[1]
    assert without["example_id"] == "a-without" and without["kind"] == "unanswerable"
    assert without["question"] == OCCUPATION["question"]
    assert without["long_answer"] is None and without["short_answers"] == []
    assert without["yes_no_answer"] == "NONE" and "supporting" not in without
    assert without["paragraphs"] == [
        "Dorhu lies on a wide river.",
        "Born in Momun in 1885, Holso Kesib grew up near the harbour.",
        'Holso once wrote: "I have never seen a city as busy as Yogil!" Nobody knows when.']


def test_a_one_sentence_gold_paragraph_is_removed_whole(tmp_path):
    row = one_hop("b", "company founded by Korel Nesel",
                  ["Dexsa Trust was founded by Korel Nesel; it grew into a banking concern.",
                   "Korel once wrote a letter."], 0, "Dexsa Trust")
    assert contrast(tmp_path, [row], "--without_only")[0]["paragraphs"] == [
        "Korel once wrote a letter."]


def test_a_quoted_sentence_ends_after_its_closing_quote(tmp_path):
    row = one_hop("q", "What did Holso Kesib call Yogil?",
                  ['Holso Kesib once wrote: "Yogil is busy!" Later, Holso worked as a poet.'],
                  0, "busy")
    assert contrast(tmp_path, [row], "--without_only")[0]["paragraphs"] == [
        "Later, Holso worked as a poet."]


def test_rows_whose_answer_stays_readable_are_skipped(tmp_path):
    # "poet" beside the person's name in another paragraph: the deleted row would still answer.
    readable = json.loads(json.dumps(OCCUPATION))
    readable["paragraphs"][0] = "Stories about a poet named Holso Kesib circulated for years."
    readable = one_hop("c", readable["question"], readable["paragraphs"], 1, "poet")
    # "poet" elsewhere about someone else does not count.
    elsewhere = json.loads(json.dumps(OCCUPATION))
    elsewhere["paragraphs"][0] = "Stories about a poet named Gilmo Vinkat circulated for years."
    elsewhere = one_hop("d", elsewhere["question"], elsewhere["paragraphs"], 1, "poet")
    # A question that starts in lower case: its first capitalised word is a name piece too.
    lower = json.loads(json.dumps(OCCUPATION))
    lower["paragraphs"][0] = "Holso, the poet, wrote to the council."
    lower = one_hop("f", "how did Holso Kesib earn a living", lower["paragraphs"], 1, "poet")
    two_hop = dict(OCCUPATION, example_id="e", kind="two_hop")
    ids = [r["example_id"] for r in contrast(
        tmp_path, [readable, elsewhere, lower, two_hop, OCCUPATION], "--without_only")]
    assert ids == ["d-without", "a-without"]


def test_first_and_last_pick_the_rows_read(tmp_path):
    rows = [dict(OCCUPATION, example_id=f"r{i}") for i in range(5)]
    ids = [r["example_id"] for r in contrast(tmp_path, rows, "--first", "1", "--last", "3")]
    assert ids == ["r1", "r1-without", "r2", "r2-without"]
