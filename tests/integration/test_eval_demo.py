"""tools/eval_demo.sh: each model folder served and scored on a gold set; its report takes its name
only once the eval has finished, so a stopped or failed eval never leaves a report that scripts
would take for a scored model."""
import json
import os
import subprocess

from test_import_hf import BUILD, SOURCE
from test_ship_model import import_and_ship

EVAL_DEMO = os.path.join(SOURCE, "tools", "eval_demo.sh")


def eval_demo(gold, out, model):
    return subprocess.run([EVAL_DEMO, str(gold), str(out), str(model)], capture_output=True,
                          text=True, env={**os.environ, "BUILD": BUILD})


def test_report_is_written_whole_or_not_at_all(tmp_path):
    _, shipped = import_and_ship(tmp_path, 3)
    words = [f"w{i}" for i in range(10, 200)]
    document = "\n\n".join(" ".join(words[p * 30:(p + 1) * 30]) for p in range(6))
    rows = [json.dumps({"example_id": f"e{i}", "question": "w20 w21 w22", "document": document,
                        "long_answer": None, "short_answers": []}) for i in range(3)]
    gold, out = tmp_path / "gold.jsonl", tmp_path / "eval"
    gold.write_text("\n".join(rows) + "\n")
    report, partial = out / "shipped.txt", out / "shipped.txt.partial"

    done = eval_demo(gold, out, shipped)
    assert done.returncode == 0, done.stderr
    first = report.read_text()
    assert first.startswith("== shipped on gold.jsonl\n") and "\nexamples 3 " in first, first
    assert not partial.exists()
    assert (out / "shipped.predictions.json").stat().st_size > 0

    # The eval fails part way (a gold row that is not JSON): the script fails, the finished report
    # stays as it was, and what the failed run wrote is left under the .partial name.
    gold.write_text("\n".join(rows[:2] + ["{not json"]) + "\n")
    failed = eval_demo(gold, out, shipped)
    assert failed.returncode != 0, failed.stdout
    assert report.read_text() == first
    assert partial.read_text().startswith("== shipped on gold.jsonl\n")
