"""tools/make_prose_dataset.py: README sentences turned into wh-questions (Lewis et al. 2019's
rule-based cloze translation), gold spans that point at the answers, files split by name, held-out
wh-phrases only in test, deterministic for a seed."""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "make_prose_dataset.py")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import make_prose_dataset as tool  # noqa: E402


def asked(sentence, heldout=False):
    """Every (answer, question) the tool makes of one sentence."""
    out = []
    for answer in tool.answers_in(sentence):
        question = tool.question_of(sentence, answer, heldout)
        if question:
            out.append((sentence[answer[1]:answer[2]], question))
    return out


def test_clauses_become_wh_questions():
    assert asked("The image listens on port 8080.") == [
        ("8080", "Which port does the image listen on?")]
    assert asked("The image listens on port 8080.", heldout=True) == [
        ("8080", "What port does the image listen on?")]
    assert asked("The default timeout is 30 seconds.") == [
        ("30 seconds", "How long is the default timeout?")]
    assert asked("The dashboard has 16 panels.") == [
        ("16", "How many panels does the dashboard have?")]
    assert asked("The container image runs as uid 10001 and serves metrics.") == [
        ("10001", "Which uid does the container image run as?")]
    assert asked("Every request waits for 2 s before it is retried.") == [
        ("2 s", "How long does every request wait for before it is retried?")]
    assert asked("The server stores its state in `/var/lib/longqa`.") == [
        ("/var/lib/longqa", "What does the server store its state in?")]
    assert asked("Its cache is limited to 4 KiB.") == [
        ("4 KiB", "How large is its cache limited to?")]
    assert asked("This tool was written by Linus Torvalds.") == [
        ("Linus Torvalds", "Who was this tool written by?")]


def test_answers_inside_a_noun_phrase_or_without_words_to_find_are_left_out():
    assert asked("The manual is in the `doc/` directory.") == []  # `doc/` modifies "directory"
    assert asked("The tests cover 100% of the code.") == []  # a part of something
    assert asked("Linux and FreeBSD are supported.") == []  # a capital first word is no subject
    assert asked("It returns `None`.") == []  # nothing but a pronoun and a verb to find it by
    assert asked("Huge thanks to `bob` for the fix.") == []


def test_readme_markup_is_read_as_text():
    p = tool.paragraphs_of("# Title\n\nSee [the guide](http://x.org) for **more**.\n\n"
                           "```\ncode\n\nmore code\n```\n\n- one item.\n- The port is `80`.\n\n"
                           "| a | b |\n| 1 | 2 |\n\nSection\n=======\n\n    indented code")
    assert [x.kind for x in p] == ["heading", "prose", "code", "prose", "table", "heading", "code"]
    assert tool.plain(p[1].text) == "See the guide for more."
    assert list(tool.sentences_of(p[3])) == []  # items too short to ask about
    (item,) = tool.paragraphs_of("- The server listens on port 8080 by default.\n- Another one "
                                 "listens on the port 9090 for metrics.")
    assert list(tool.sentences_of(item)) == ["The server listens on port 8080 by default.",
                                             "Another one listens on the port 9090 for metrics."]
    assert tool.plain(":func:`os.getcwd` and ``x``") == "`os.getcwd` and `x`"


def test_table_cells_become_questions_by_header_and_first_column():
    text = ("| flag | default | meaning |\n| --- | --- | --- |\n"
            "| `--drain_timeout_s` | 30 | how long SIGTERM waits |\n"
            "| `--listen` | `127.0.0.1:50051` | the gRPC address |\n"
            "| `--threads` | 0 | compute threads; 0 picks |")
    facts = tool.table_facts(text, heldout=False)
    asked_ = {q: a for q, a, _ in facts}
    assert asked_["What is the default of --drain_timeout_s?"] == "30"
    assert asked_["What is the default of --listen?"] == "127.0.0.1:50051"  # without the `code`
    assert asked_["What is the meaning of --threads?"] == "compute threads; 0 picks"
    for _, answer, where in facts:  # the span is the cell's, not an equal text elsewhere
        assert where.group(0) == answer
    (_, _, zero), = [f for f in facts if f[0] == "What is the default of --threads?"]
    assert text[:zero.start()].endswith("| `--threads` | ")
    held = {q for q, _, _ in tool.table_facts(text, heldout=True)}
    assert "What default does --listen have?" in held
    # An indented reST grid table: a cell over two lines is no answer, its row's key still is.
    grid = ("   +-------+-------------+---------+\n"
            "   | Name  | Description | Default |\n"
            "   +=======+=============+=========+\n"
            "   | alpha | first line  | 10      |\n"
            "   |       | second line |         |\n"
            "   +-------+-------------+---------+\n"
            "   | beta  | one line    | 20      |\n"
            "   +-------+-------------+---------+\n"
            "   | gamma | another one | 30      |\n"
            "   +-------+-------------+---------+")
    got = {q: a for q, a, _ in tool.table_facts(grid, heldout=False)}
    assert got == {"What is the default of alpha?": "10", "What is the description of beta?":
                   "one line", "What is the default of beta?": "20",
                   "What is the description of gamma?": "another one",
                   "What is the default of gamma?": "30"}
    merged = grid.replace("   +-------+-------------+---------+\n   | beta",
                          "   +-------+-------------+         +\n   | beta")
    assert tool.table_of(merged) is None
    # A question a file answers in two tables has no one answer: left out.
    doc = tool.Page("x/README.md", tool.paragraphs_of(text + "\n\n" + text.replace("30", "60")))
    assert "What is the default of --drain_timeout_s?" not in [f[1] for f in tool.all_facts(
        doc, False)]


SENTENCES = [  # {p}: the package's name, {n}: a number of its own
    "The {p} {p}x listens on port {n}.",
    "The {p} {p}x is limited to {n} MB.",
    "The {p} {p}x stores its {p}y in `/var/lib/{p}`.",
    "The {p} {p}x was designed by Ada Lovelace{n}.",
    "The {p} {p}x has {n} slots.",
]
PACKAGE = re.compile(r"pkg[a-j]{2}(?![a-z])")
HELD_OUT = ("what port", "what size", "what exactly", "which person", "what number of",
            "what default")


def write_docs(tmp_path, count=40):
    """READMEs of `count` packages (pkgaa, pkgab, ...), every one with an answer of each kind."""
    paths = []
    for i in range(count):
        p = "pkg" + "".join(chr(97 + int(d)) for d in f"{i:02d}")
        body = " ".join(s.format(p=p, n=1000 + i) for s in SENTENCES)
        filler = " ".join(f"The {p} notes say {k} things." for k in range(30))
        table = (f"| setting | default |\n| --- | --- |\n| {p}_timeout | {1000 + i} s |\n"
                 f"| {p}_mode | fast{1000 + i} |\n| {p}_dir | `/srv/{p}` |")
        folder = tmp_path / "doc" / p
        folder.mkdir(parents=True)
        path = folder / "README.md"
        path.write_text(f"# {p}\n\n{filler}\n\n{body}\n\n{table}\n\n{filler}\n")
        paths.append(str(path))
    return paths


def generate(tmp_path, name, seed, *flags, paths=None):
    out = tmp_path / name
    subprocess.run([sys.executable, TOOL, "--out", str(out), "--seed", str(seed), "--train", "80",
                    "--dev", "0", "--test", "40", "--min_tokens", "60", "--max_tokens", "300",
                    *flags] + (paths or write_docs(tmp_path / name)), check=True,
                   capture_output=True)
    return {split: [json.loads(line) for line in open(out / f"{split}.jsonl")]
            for split in ("train", "test")}


def test_gold_spans_point_at_the_answers(tmp_path):
    data = generate(tmp_path, "a", 1)
    kinds = set()
    expected = {"number": r"\d{4}( MB)?", "code": r"/var/lib/pkg[a-j]{2}",
                "name": r"Ada Lovelace\d{4}", "table": r"\d{4} s|fast\d{4}|/srv/pkg[a-j]{2}"}
    for split, examples in data.items():
        assert examples, split
        for e in examples:
            kinds.add(e["kind"])
            text = "\n\n".join(e["paragraphs"])
            package = PACKAGE.search(text).group(0)
            if e["kind"] == "unanswerable":
                assert e["long_answer"] is None and e["short_answers"] == []
                # Asked of another package's README: that name is nowhere in this document.
                other = PACKAGE.search(e["question"]).group(0)
                assert other != package and other not in text
                continue
            raw = text.encode()
            la, (sa,) = e["long_answer"], e["short_answers"]
            assert la["start_byte"] <= sa["start_byte"] < sa["end_byte"] <= la["end_byte"]
            short = raw[sa["start_byte"]:sa["end_byte"]].decode()
            assert re.fullmatch(expected[e["kind"]], short), (e["kind"], short)
            assert short not in e["question"] and package in e["question"]
    assert kinds == {"number", "code", "name", "table", "unanswerable"}


def test_files_split_by_name_and_wh_phrases_held_out(tmp_path):
    data = generate(tmp_path, "b", 2)
    for split, examples in data.items():
        for e in examples:
            package = PACKAGE.search("\n\n".join(e["paragraphs"])).group(0)
            assert tool.split_of(f"{package}/README.md") == split
    assert {e["phrasing"] for e in data["train"]} == {"seen"}
    assert {e["phrasing"] for e in data["test"]} == {"seen", "heldout"}
    for e in data["train"] + data["test"]:
        held = e["question"].lower().startswith(HELD_OUT)
        assert held == (e["phrasing"] == "heldout"), e["question"]


def test_deterministic_for_a_seed(tmp_path):
    first = generate(tmp_path, "c", 3)
    assert first == generate(tmp_path, "d", 3)
    assert first != generate(tmp_path, "e", 4)


def test_min_file_tokens_leaves_short_files_out(tmp_path):
    paths = write_docs(tmp_path / "docs")
    long_packages = set()
    for i, path in enumerate(paths):
        if i % 2 == 0:  # every other README three times as long
            with open(path, "a") as f:
                f.write("\n\n" + " ".join(f"More notes, part {k}." for k in range(150)) + "\n")
            long_packages.add(PACKAGE.search(open(path).read()).group(0))
    data = generate(tmp_path, "f", 5, "--min_file_tokens", "900", "--min_tokens", "900",
                    "--max_tokens", "5000", paths=paths)
    assert data["train"] and data["test"]
    for e in data["train"] + data["test"]:
        text = "\n\n".join(e["paragraphs"])
        assert PACKAGE.search(text).group(0) in long_packages
        assert tool.tokens(text) >= 900, tool.tokens(text)
