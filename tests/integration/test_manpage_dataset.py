"""tools/make_manpage_dataset.py: man pages parsed into paragraphs, questions with gold spans that
point at their answers, pages split by name, deterministic for a seed."""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "make_manpage_dataset.py")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import make_manpage_dataset as tool  # noqa: E402


def page_text(command, verb, options):
    """A man page as `man -l` renders it at MANWIDTH=2000 (header, sections, footer)."""
    lines = [f"{command.upper()}(1)    User Commands    {command.upper()}(1)", "", "NAME",
             f"       {command} - {verb} files in a directory", "", "SYNOPSIS",
             f"       {command} [OPTION]... [FILE]...", "", "DESCRIPTION",
             f"       {command.capitalize()} reads each FILE and writes the result.  It never "
             "changes the FILE itself.", "", "   Output control"]
    for tag, body in options:
        lines += [f"       {tag}", f"              {body}", ""]
    lines += ["       -z     end each output line with NUL, not newline", "", "ENVIRONMENT",
              f"       {command.upper()}_COLORS", "              Colours the output when set.", "",
              "GNU coreutils 9.1    September 2022    " + command.upper() + "(1)", ""]
    return "\n".join(lines)


PAGES = {  # command: its split (tool.split_of), fixed by the command's name
    "packer": "train", "unpacker": "train", "sorter": "train", "grepx": "test", "zipper": "test"}


def write_pages(tmp_path):
    paths = []
    for i, command in enumerate(PAGES):
        options = [(f"-{c}, --{w}-{command}", f"print the {w} of each file; see below.")
                   for c, w in zip("abc", ["size", "owner", "mode"])]
        options.append((f"--quiet-{i}", "Suppresses warnings about unreadable files."))
        path = tmp_path / f"{command}.1.txt"
        path.write_text(page_text(command, ["pack", "unpack", "sort", "search", "zip"][i], options))
        paths.append(str(path))
    return paths


def test_a_rendered_page_parses_into_name_entries_headings_and_prose(tmp_path):
    path = write_pages(tmp_path)[0]
    page = tool.parse_page(open(path).read(), ": ")
    assert page.command == "packer"
    kinds = [(p.kind, p.text) for p in page.paragraphs]
    assert ("name", "packer - pack files in a directory") in kinds
    assert ("heading", "Description") in kinds and ("heading", "Output control") in kinds
    assert ("prose", "Packer reads each FILE and writes the result. It never changes the FILE "
            "itself.") in kinds
    entries = {p.tag: p.body for p in page.paragraphs if p.kind == "entry"}
    assert entries["-a, --size-packer"] == "print the size of each file; see below."
    assert entries["-z"] == "end each output line with NUL, not newline"  # tag and body inline
    assert entries["PACKER_COLORS"] == "Colours the output when set."
    assert "-a, --size-packer: print the size of each file; see below." in [
        p.text for p in page.paragraphs]
    assert not any("GNU coreutils" in p.text or "PACKER(1)" in p.text for p in page.paragraphs)


def test_question_clauses_from_descriptions():
    assert tool.as_question_clause("Suppresses warnings about files.") == (
        "3rd", "suppresses warnings about files")
    assert tool.as_question_clause("print the size of each file; see below.") == (
        "imp", "print the size of each file")
    assert tool.as_question_clause("do not list implied entries") == ("imp", "not list implied entries")
    assert tool.as_question_clause("with -l, print the author") is None  # names another flag
    assert tool.as_question_clause("Test mode.") is None  # too short to tell a verb
    assert tool.as_question_clause("the file to read from") is None  # a noun phrase


def command_asked(question):
    """The command of a NAME_WHAT question ("What does packer do?" -> "packer")."""
    for form in tool.NAME_WHAT[0] + tool.NAME_WHAT[1]:
        m = re.fullmatch(re.escape(form).replace(r"\{cmd\}", r"(\S+)"), question)
        if m:
            return m.group(1)
    raise AssertionError(f"not a question about a command: {question}")


def generate(tmp_path, name, seed, markdown=0):
    out = tmp_path / name
    subprocess.run([sys.executable, TOOL, "--out", str(out), "--seed", str(seed), "--train", "60",
                    "--dev", "0", "--test", "30", "--min_tokens", "20", "--max_tokens", "120",
                    "--markdown", str(markdown)] + write_pages(tmp_path), check=True,
                   capture_output=True)
    return {split: [json.loads(line) for line in open(out / f"{split}.jsonl")]
            for split in ("train", "test")}


def test_gold_spans_point_at_the_answers(tmp_path):
    data = generate(tmp_path, "a", 1)
    kinds = set()
    for examples in data.values():
        for e in examples:
            kinds.add(e["kind"])
            text = "\n\n".join(e["paragraphs"])
            q = e["question"]
            assert e["question"].endswith(("?", ".")) and "{" not in q
            if e["kind"] == "unanswerable":
                assert e["long_answer"] is None and e["short_answers"] == []
                # The option or command asked about appears nowhere in the document.
                flag = re.search(r"(?<![\w-])--?[\w-]+", q)
                asked = flag.group(0) if flag else command_asked(q)
                assert not re.search(rf"(?<![\w-]){re.escape(asked)}(?![\w-])", text), q
                continue
            raw = text.encode()
            la = e["long_answer"]
            paragraph = raw[la["start_byte"]:la["end_byte"]].decode()
            assert paragraph in e["paragraphs"]
            short = [raw[s["start_byte"]:s["end_byte"]].decode() for s in e["short_answers"]]
            if e["kind"] == "option_what":
                flag = re.search(r"(?<![\w-])--?[\w-]+", q).group(0)
                assert short and not short[0].startswith("-")
                # The entry's tag (before its description) holds the flag asked about.
                assert paragraph.startswith("-") and flag in paragraph[:paragraph.index(short[0])]
            if e["kind"] == "option_which":
                (answer,) = short
                assert answer.startswith("-") and answer not in q
            if e["kind"] == "name_what":
                assert " - " in paragraph and short == [paragraph.split(" - ", 1)[1]]
            if e["kind"] == "name_which":
                assert short == [paragraph.split(" - ")[0]] and short[0] not in q
            if e["kind"] == "term_what":
                term = paragraph.split(" ")[0].rstrip(":")
                assert term.endswith("_COLORS") and term in q
                assert short == ["Colours the output when set"]
    assert kinds == {"option_what", "option_which", "name_what", "name_which", "term_what",
                     "unanswerable"}


def test_pages_split_by_name_and_phrasings_held_out(tmp_path):
    data = generate(tmp_path, "b", 2)
    for split, examples in data.items():
        for e in examples:
            names = {p.split(" - ")[0] for p in e["paragraphs"] if " - " in p and
                     p.split(" - ")[0] in PAGES}
            assert names and all(PAGES[n] == split for n in names), (split, names)
    assert {e["phrasing"] for e in data["train"]} == {"seen"}
    assert {e["phrasing"] for e in data["test"]} == {"seen", "heldout"}
    seen = {e["question"] for e in data["train"]}
    heldout_forms = [form for table in (tool.OPTION_WHAT, tool.NAME_WHAT, tool.NAME_WHICH)
                     for form in table[1]]
    for q in seen:  # no training question uses a held-out phrasing
        for form in heldout_forms:
            pattern = re.escape(form).replace(r"\{flag\}", ".+").replace(r"\{cmd\}", ".+")
            assert not re.fullmatch(pattern.replace(r"\{desc\}", ".+"), q), q


def test_deterministic_for_a_seed(tmp_path):
    assert generate(tmp_path, "c", 3) == generate(tmp_path, "d", 3)
    assert generate(tmp_path, "c", 3) != generate(tmp_path, "e", 4)


def test_markdown_documents_hold_entries_in_lists_or_tables(tmp_path):
    """As a README writes it: a run of entries is one paragraph (a list or a table) and the short
    answer is the asked entry's, found inside that block, even where a line wraps."""
    data = generate(tmp_path, "m", 5, markdown=1)
    styles, most_entries = set(), 0
    for e in data["train"] + data["test"]:
        assert not any(p.startswith(("Description", "Output control")) for p in e["paragraphs"])
        if e["long_answer"] is None or e["kind"] not in ("option_what", "option_which"):
            continue
        raw = "\n\n".join(e["paragraphs"]).encode()
        la, (sa,) = e["long_answer"], e["short_answers"]
        block = raw[la["start_byte"]:la["end_byte"]].decode()
        styles.add("table" if block.startswith("| ") else "list")
        assert all(line.startswith(("|", "- `", "  ")) for line in block.split("\n"))
        most_entries = max(most_entries, block.count("\n- `") + block.count("\n| `") + 1)
        # The answer's line: the entry whose tag holds the flag asked about.
        line_start = raw.rfind(b"\n", 0, sa["start_byte"]) + 1
        line = raw[line_start:].decode().split("\n")[0]
        short = raw[sa["start_byte"]:sa["end_byte"]].decode()
        if e["kind"] == "option_which":
            assert line.startswith(("| `", "- `")) and line.split("`")[1] == short
        else:
            flag = re.search(r"(?<![\w-])--?[\w-]+", e["question"]).group(0)
            entry = " ".join(raw[line_start:la["end_byte"]].decode().split())
            _, tag, description = entry.split("`", 2)
            assert flag in tag and description.lstrip(": |").startswith(" ".join(short.split()))
    assert styles == {"table", "list"} and most_entries >= 4
