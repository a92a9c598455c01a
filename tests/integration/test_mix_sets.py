"""tools/mix_sets.py: rows first..last of each set, ids prefixed, shuffled by the seed or kept in
order without one."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "mix_sets.py")


def write_set(folder, name, count):
    os.makedirs(folder / os.path.dirname(name), exist_ok=True)
    with open(folder / f"{name}.jsonl", "w") as out:
        for i in range(count):
            out.write(json.dumps({"example_id": f"{name}-{i}", "question": f"q{i}"}) + "\n")


def mix(folder, out, *args):
    subprocess.run([sys.executable, TOOL, str(folder), out, *args], check=True)
    return [json.loads(line)["example_id"] for line in open(folder / out)]


def test_rows_sliced_prefixed_and_kept_in_order_without_a_seed(tmp_path):
    write_set(tmp_path, "a/train", 10)
    write_set(tmp_path, "b/dev", 5)
    ids = mix(tmp_path, "m/calib.jsonl", "a/train:x-:2:4", "b/dev:y-:3:")
    assert ids == ["x-a/train-2", "x-a/train-3", "y-b/dev-3", "y-b/dev-4"]
    assert mix(tmp_path, "again.jsonl", "m/calib::0:1") == ["x-a/train-2"]  # empty prefix


def test_a_seed_shuffles_the_same_rows_the_same_way(tmp_path):
    write_set(tmp_path, "a", 50)
    first = mix(tmp_path, "m1.jsonl", "--seed", "7", "a:p-:0:")
    assert first == mix(tmp_path, "m2.jsonl", "--seed", "7", "a:p-:0:")
    assert first != [f"p-a-{i}" for i in range(50)] and sorted(first) == sorted(
        f"p-a-{i}" for i in range(50))
    assert first != mix(tmp_path, "m3.jsonl", "--seed", "8", "a:p-:0:")
