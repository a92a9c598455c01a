"""tools/ship_model.py: a checkpoint becomes a servable half-precision folder whose config carries
the calibrated null threshold, and the server answers from it as from the fp32 folder."""
import json
import os
import re
import subprocess
import sys

import torch
from safetensors import safe_open
from transformers import BertConfig, BertForQuestionAnswering

from longqa_process import start_server
from test_import_hf import BUILD, SOURCE, TINY, import_model, perturb, save_hf

SHIP = os.path.join(SOURCE, "tools", "ship_model.py")
CLI = os.path.join(BUILD, "client", "longqa")
THRESHOLD = os.path.join(SOURCE, "tools", "calibrated_threshold.sh")


def ask(port, document_path, *extra, question="w20 w21 w22"):
    out = subprocess.run([CLI, "ask", f"--target=127.0.0.1:{port}", "--question", question,
                          f"--file={document_path}", "--json", *extra],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def import_and_ship(tmp_path, seed, *ship_flags):
    """A tiny random BERT QA model imported (fp32 folder) and shipped with `ship_flags`."""
    config = BertConfig(vocab_size=1003, max_position_embeddings=160, **TINY)
    model = BertForQuestionAnswering(config)
    perturb(model, seed)
    hf_dir, fp32_dir, shipped_dir = tmp_path / "hf", tmp_path / "fp32", tmp_path / "shipped"
    save_hf(model, hf_dir)
    import_model(str(hf_dir), str(fp32_dir), "--max_question_tokens=16", "--window_tokens=64",
                 "--stride_tokens=48")
    (fp32_dir / "optimizer.safetensors").write_bytes(b"left behind")  # as a checkpoint has
    subprocess.run([sys.executable, SHIP, str(fp32_dir), str(shipped_dir), *ship_flags],
                   check=True, capture_output=True, text=True)
    return fp32_dir, shipped_dir


def test_half_precision_folder_answers_like_fp32_with_its_null_threshold(tmp_path):
    fp32_dir, fp16_dir = import_and_ship(tmp_path, 5, "--null_threshold=0.5")

    assert sorted(os.listdir(fp16_dir)) == ["config.json", "model.safetensors", "tokenizer.json"]
    shipped = json.loads((fp16_dir / "config.json").read_text())
    assert shipped["null_threshold"] == 0.5
    assert shipped["layers"] == json.loads((fp32_dir / "config.json").read_text())["layers"]
    with safe_open(str(fp16_dir / "model.safetensors"), "pt") as f:
        assert {f.get_tensor(k).dtype for k in f.keys()} == {torch.float16}
    ratio = (fp16_dir / "model.safetensors").stat().st_size / (
        fp32_dir / "model.safetensors").stat().st_size
    assert 0.45 < ratio < 0.55, ratio

    document = tmp_path / "doc.txt"
    words = [f"w{i}" for i in range(10, 400)]
    document.write_text("\n\n".join(" ".join(words[p * 30:(p + 1) * 30]) for p in range(12)))
    servers = [start_server(str(d)) for d in (fp32_dir, fp16_dir)]
    try:
        (_, port32, _, _), (_, port16, _, _) = servers
        info = subprocess.run([CLI, "info", f"--target=127.0.0.1:{port16}"], check=True,
                              capture_output=True, text=True).stdout
        assert "default null threshold: 0.5" in info, info
        assert "answers: squad, answer score type\n" in info, info
        # A squad model has no long-answer head: --calibrate_null offers no other answer_score.
        gold = tmp_path / "gold.jsonl"
        gold.write_text("".join(json.dumps({
            "example_id": f"e{i}", "question": "w20 w21 w22", "document": document.read_text(),
            "long_answer": None, "short_answers": []}) + "\n" for i in range(2)))
        calibrated = subprocess.run([CLI, "eval", f"--target=127.0.0.1:{port16}", f"--gold={gold}",
                                     "--calibrate_null"], check=True, capture_output=True,
                                    text=True).stdout
        assert "null threshold " in calibrated and "with answer_score" not in calibrated, calibrated
        # The ship scripts read it back from the report with tools/calibrated_threshold.sh.
        (tmp_path / "calib.txt").write_text(calibrated)
        chosen = re.search(r"^null threshold (\S+) ", calibrated, re.M).group(1)
        assert threshold_in(tmp_path / "calib.txt").stdout == chosen + "\n"
        full = ask(port32, document, "--null_threshold=-1000")  # both must answer
        half = ask(port16, document, "--null_threshold=-1000")
        # Weights rounded to 11 significant bits; the arithmetic stays fp32. (`longqa ask --json`
        # writes client/requests.cc's keys: snake_case, answer types without their prefix.)
        for key in ("no_answer_score", "best_answer_score"):
            assert abs(full[key] - half[key]) < 2e-2, (key, full, half)
        assert full["answer_type"] == half["answer_type"] != "NO_ANSWER", (full, half)
        assert full["long_answer"]["byte_begin"] == half["long_answer"]["byte_begin"]
        # No threshold in the request: the folder's 0.5 decides.
        default = ask(port16, document)
        margin = default["best_answer_score"] - default["no_answer_score"]
        assert (default["answer_type"] == "NO_ANSWER") == (margin <= 0.5), default
        forced = ask(port16, document, f"--null_threshold={margin - 1}")  # rule: null iff t >= margin
        assert forced["answer_type"] != "NO_ANSWER", forced
        nulled = ask(port16, document, f"--null_threshold={margin + 1}")
        assert nulled["answer_type"] == "NO_ANSWER", nulled
    finally:
        for proc, *_ in servers:
            proc.terminate()
            proc.wait()


def threshold_in(report):
    return subprocess.run([THRESHOLD, str(report)], capture_output=True, text=True)


def test_calibrated_threshold_is_the_reports_last_and_none_is_an_error(tmp_path):
    report = tmp_path / "calib.txt"
    # A rerun appends its own report; answer_score type's alternative is not the choice.
    report.write_text("== tl on long100.jsonl\nnull threshold 2.5 (chosen on this set: ...)\n"
                      "== tl on long100.jsonl\n"
                      "null threshold -4.21162 (chosen on this set: long F1 0.7516)\n"
                      "with answer_score type: null threshold 1.12441 (long F1 0.7500)\n")
    read = threshold_in(report)
    assert (read.returncode, read.stdout) == (0, "-4.21162\n"), read
    report.write_text("== tl on long100.jsonl\nexamples 100 (gold long 81)\n")  # stopped early
    read = threshold_in(report)
    assert read.returncode != 0 and read.stdout == "", read
    assert "no calibrated null threshold in" in read.stderr, read


def test_calibrated_ship_flags_are_the_last_runs_threshold_and_bands(tmp_path):
    report = tmp_path / "calib.txt"
    # An interrupted run's lines first, then the last run's: only the last run's are flags.
    report.write_text("== tl on calib3.jsonl\nnull threshold 1.5 (chosen on ...)\n"
                      "null_threshold_band 4096 3.25 (chosen on ...)\n"
                      "== tl on calib3.jsonl\n"
                      "null threshold -14.5834 (chosen on 380 examples with fewer than 4096 ...)\n"
                      "null_threshold_band 4096 8.7756 (chosen on 100 examples with 4096 ...)\n"
                      "null_threshold_band 16384 9.5 (chosen on 20 examples with 16384 ...)\n")
    read = subprocess.run([THRESHOLD, "--ship_flags", str(report)], capture_output=True, text=True)
    flags = sorted(read.stdout.split())
    assert read.returncode == 0 and flags == sorted(
        ["--null_threshold=-14.5834", "--null_threshold_band=4096:8.7756",
         "--null_threshold_band=16384:9.5"]), read
    report.write_text("== tl on calib3.jsonl\nexamples 100 (gold long 81)\n")  # stopped early
    read = subprocess.run([THRESHOLD, "--ship_flags", str(report)], capture_output=True, text=True)
    assert read.returncode != 0 and "no calibrated null threshold in" in read.stderr, read


def cpu_has_bf16():
    """As model/compute_info.cc decides: AVX512_BF16 (AMX CPUs have it too)."""
    with open("/proc/cpuinfo") as f:
        return any("avx512_bf16" in line.split() for line in f if line.startswith("flags"))


def test_default_precision_is_what_the_server_serves_in_unless_told(tmp_path):
    # A list in order of preference (models/demo's): bf16 where the CPU has it, else int8.
    fp32_dir, shipped_dir = import_and_ship(tmp_path, 6, "--default_precision=bf16,int8")
    assert json.loads((shipped_dir / "config.json").read_text())["default_precision"] == "bf16,int8"
    # Unset in a folder (here the importer's): fp32.
    assert "default_precision" not in json.loads((fp32_dir / "config.json").read_text())
    # A name that is no precision is refused before anything is written.
    refused = subprocess.run([sys.executable, SHIP, str(fp32_dir), str(tmp_path / "bad"),
                              "--default_precision=bf16,fp16"], capture_output=True, text=True)
    assert refused.returncode == 2 and "fp16" in refused.stderr, refused.stderr
    assert not (tmp_path / "bad").exists()

    expected = "bf16" if cpu_has_bf16() else "int8"
    cases = [(shipped_dir, (), expected, "(auto: the model's default_precision bf16,int8"),
             (shipped_dir, ("--precision=fp32",), "fp32", "(--precision)"),
             (fp32_dir, (), "fp32", "(auto: the model's default_precision fp32)")]
    for folder, flags, precision, reason in cases:
        proc, port, _, log = start_server(str(folder), *flags)
        try:
            assert f"longqa-server: precision {precision} {reason}" in log, log
            info = subprocess.run([CLI, "info", f"--target=127.0.0.1:{port}"], check=True,
                                  capture_output=True, text=True).stdout
            assert f"precision {precision}\n" in info, info
        finally:
            proc.terminate()
            proc.wait()


def test_int8_recheck_margin_is_what_an_int8_server_rechecks_within(tmp_path):
    fp32_dir, shipped_dir = import_and_ship(tmp_path, 7, "--int8_recheck_margin=0.25")
    assert json.loads((shipped_dir / "config.json").read_text())["int8_recheck_margin"] == 0.25
    for bad in ("-1", "nan", "inf"):
        refused = subprocess.run([sys.executable, SHIP, str(fp32_dir), str(tmp_path / "bad"),
                                  f"--int8_recheck_margin={bad}"], capture_output=True, text=True)
        assert refused.returncode == 2 and "int8_recheck_margin" in refused.stderr, bad
        assert not (tmp_path / "bad").exists()
    proc, _, _, log = start_server(str(shipped_dir), "--precision=int8")
    try:
        assert "int8 answers within 0.25 logits of another are computed again in fp32" in log, log
    finally:
        proc.terminate()
        proc.wait()


def test_null_threshold_bands_give_long_documents_their_own_default(tmp_path):
    # Far apart on purpose: short documents always answer, those of 6 tokens or more never do
    # (this tokenizer has no pre-tokenizer: a paragraph is one unknown token).
    fp32_dir, shipped_dir = import_and_ship(tmp_path, 8, "--null_threshold=-1000",
                                            "--null_threshold_band=6:1000")
    config = json.loads((shipped_dir / "config.json").read_text())
    assert config["null_threshold_bands"] == [{"min_document_tokens": 6, "null_threshold": 1000}]
    for bad in ("0:1", "200", "200:nan", "x:1"):
        refused = subprocess.run([sys.executable, SHIP, str(fp32_dir), str(tmp_path / "bad"),
                                  f"--null_threshold_band={bad}"], capture_output=True, text=True)
        assert refused.returncode == 2 and "null_threshold_band" in refused.stderr, bad
        assert not (tmp_path / "bad").exists()

    words = [f"w{i}" for i in range(10, 400)]
    short, long = tmp_path / "short.txt", tmp_path / "long.txt"
    short.write_text(" ".join(words[:30]))
    long.write_text("\n\n".join(" ".join(words[p * 30:(p + 1) * 30]) for p in range(12)))
    proc, port, _, _ = start_server(str(shipped_dir))
    try:
        info = subprocess.run([CLI, "info", f"--target=127.0.0.1:{port}"], check=True,
                              capture_output=True, text=True).stdout
        assert "default null threshold: -1000; 1000 from 6 document tokens\n" in info, info
        short_answer, long_answer = ask(port, short), ask(port, long)
        tokens = short_answer["usage"]["document_tokens"], long_answer["usage"]["document_tokens"]
        assert tokens[0] < 6 <= tokens[1], tokens
        assert short_answer["answer_type"] != "NO_ANSWER", short_answer
        assert long_answer["answer_type"] == "NO_ANSWER", long_answer
        # A request's own threshold still decides over the bands.
        forced = ask(port, long, "--null_threshold=-1000")
        assert forced["answer_type"] != "NO_ANSWER", forced
    finally:
        proc.terminate()
        proc.wait()


def test_answer_score_type_plus_long_adds_the_long_answers_score_to_the_rule(tmp_path):
    # models/demo (qa_format nq) shipped with --answer_score=type+long: the same logits, and
    # best_answer_score grows by the long answer's score; qa.proto's rule decides with it.
    demo = os.path.join(SOURCE, "models", "demo")
    shipped = tmp_path / "type_long"
    subprocess.run([sys.executable, SHIP, demo, str(shipped), "--answer_score=type+long"],
                   check=True, capture_output=True, text=True)
    assert json.loads((shipped / "config.json").read_text())["answer_score"] == "type+long"
    servers = [start_server(d, "--precision=fp32") for d in (demo, str(shipped))]
    try:
        (_, port_type, _, _), (_, port_long, _, _) = servers
        infos = [subprocess.run([CLI, "info", f"--target=127.0.0.1:{port}"], check=True,
                                capture_output=True, text=True).stdout
                 for port in (port_type, port_long)]
        assert "answers: nq, answer score type\n" in infos[0], infos[0]
        assert "answers: nq, answer score type+long\n" in infos[1], infos[1]
        document = os.path.join(demo, "sample.txt")
        with open(os.path.join(demo, "sample_questions.json")) as f:
            questions = [q["question"] for q in json.load(f)][:3]
        for question in questions:
            def ask_both(*extra):
                return [ask(port, document, *extra, question=question)
                        for port in (port_type, port_long)]
            plain, added = ask_both("--null_threshold=-1000")
            # The same weights in two servers: the same logits to fp32 rounding (their GEMMs
            # may split the work differently).
            span = ("byte_begin", "byte_end")
            assert [plain["long_answer"][k] for k in span] == [added["long_answer"][k] for k in span]
            assert abs(plain["no_answer_score"] - added["no_answer_score"]) < 1e-3
            expected = plain["best_answer_score"] + plain["long_answer"]["score"]
            assert abs(added["best_answer_score"] - expected) < 1e-3, (plain, added)
            # A threshold between the two margins: NO_ANSWER from one server only.
            margins = [a["best_answer_score"] - a["no_answer_score"] for a in (plain, added)]
            if abs(margins[0] - margins[1]) < 1e-3:
                continue
            split = ask_both(f"--null_threshold={sum(margins) / 2}")
            assert [a["answer_type"] == "NO_ANSWER" for a in split] == [
                margins[0] < margins[1], margins[1] < margins[0]], (margins, split)
    finally:
        for proc, _, _, _ in servers:
            proc.terminate()
            proc.wait()


def test_answer_score_type_plus_long_is_refused_without_a_long_answer_head(tmp_path):
    # An imported SQuAD checkpoint (qa_format squad) has no paragraph scores to add.
    _, shipped_dir = import_and_ship(tmp_path, 8, "--answer_score=type+long")
    refused = subprocess.run([os.path.join(BUILD, "server", "longqa-server"),
                              f"--model_dir={shipped_dir}", "--listen=127.0.0.1:0",
                              "--metrics_listen=127.0.0.1:0"],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0
    assert "'answer_score'" in refused.stderr and "qa_format" in refused.stderr, refused.stderr
