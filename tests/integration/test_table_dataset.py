"""tools/make_table_dataset.py: tables built from package, service and protocol records set in
README files, each question's gold span the cell its header and key name (checked here by reading
the table's text independently of the tool's parser), unanswerable questions about rows the
document lacks, host files of the split only, deterministic for a seed."""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "make_table_dataset.py")
sys.path.insert(0, os.path.join(ROOT, "tools"))
from make_manpage_dataset import split_of  # noqa: E402

PACKAGES = {f"libfoo{i}": {"Version": f"1.{i}.{i + 3}-2",
                           "Section": ["libs", "net", "admin"][i % 3],
                           "Priority": ["optional", "important"][i % 2],
                           "Installed-Size": str(512 + 997 * i), "Architecture": "amd64",
                           "Maintainer": f"Ada Lovelace{i}", "Source": f"foo-src{i}",
                           "Description": f"Foo runtime library, part {i}"}
            for i in range(14)}
SERVICES = {f"svc{i}": (str(7000 + i), ["tcp", "udp"][:1 + i % 2], f"alias{i}") for i in range(14)}
PROTOCOLS = {f"proto{i}": (str(40 + i), f"PROTO{i}", f"experimental protocol {i}")
             for i in range(14)}


def write_sources(tmp_path):
    status = "\n\n".join(
        f"Package: {name}\nStatus: install ok installed\n" + "\n".join(
            f"{k}: {v}" + (" <ada@example.org>" if k == "Maintainer" else "")
            for k, v in fields.items()) for name, fields in PACKAGES.items())
    (tmp_path / "status").write_text(status + "\n")
    (tmp_path / "services").write_text("# services\n" + "".join(
        f"{name}\t\t{port}/{proto}\t\t{alias}\t# a comment\n"
        for name, (port, protos, alias) in SERVICES.items() for proto in protos))
    (tmp_path / "protocols").write_text("".join(
        f"{name}\t{number}\t{alias}\t\t# {desc}\n"
        for name, (number, alias, desc) in PROTOCOLS.items()))
    return ["--dpkg_status", str(tmp_path / "status"), "--services", str(tmp_path / "services"),
            "--protocols", str(tmp_path / "protocols")]


def write_hosts(tmp_path, count=30):
    """README files pkg0 ... pkg29 (split_of gives train, dev and test among them); each paragraph
    says its file's name, and each file holds a table of its own that must not be kept."""
    paths = []
    for i in range(count):
        folder = tmp_path / "doc" / f"pkg{i}"
        folder.mkdir(parents=True)
        prose = "\n\n".join(f"The host{i} file says {k} things about its work." for k in range(12))
        (folder / "README.md").write_text(
            f"# pkg{i}\n\n{prose}\n\n| key | value |\n| --- | --- |\n| a{i} | b |\n| c{i} | d |\n")
        paths.append(str(folder / "README.md"))
    return paths


def generate(tmp_path, name, seed, *flags):
    out = tmp_path / name
    sources = write_sources(tmp_path)
    hosts = write_hosts(tmp_path / name)
    subprocess.run([sys.executable, TOOL, "--out", str(out), "--seed", str(seed), "--train", "120",
                    "--dev", "30", "--test", "0", "--min_tokens", "60", "--max_tokens", "200",
                    *flags, *sources] + hosts, check=True, capture_output=True)
    return {split: [json.loads(line) for line in open(out / f"{split}.jsonl")]
            for split in ("train", "dev")}


def values_of(key):
    """Every text a cell of `key`'s row may hold (a size in its three renderings)."""
    if key in PACKAGES:
        out = set(PACKAGES[key].values())
        n = int(PACKAGES[key]["Installed-Size"])
        out |= {f"{n:,} KiB", f"{n} KiB", f"{n / 1024:.1f} MiB" if n >= 1024 else f"{n} kB"}
        return out - {PACKAGES[key]["Installed-Size"]}
    if key in SERVICES:
        port, protos, alias = SERVICES[key]
        return {port, " and ".join(protos), alias}
    return set(PROTOCOLS[key])


def cells(line):
    return [c.strip().strip("`") for c in line.strip().strip("|").split("|")]


def is_row(line):
    """A header or data line of a pipe or grid table (not a rule or border)."""
    return line.startswith("|") and not re.fullmatch(r"[|\s-]+", line)


def table_cells(e):
    """The cells of the answer table's lines, header first, and the document's bytes."""
    document = "\n\n".join(e["paragraphs"]).encode()
    table = document[e["long_answer"]["start_byte"]:e["long_answer"]["end_byte"]].decode()
    return [cells(line) for line in table.split("\n") if is_row(line)], document


def test_gold_spans_are_the_cells_the_questions_name(tmp_path):
    data = generate(tmp_path, "a", 1)
    kinds = [e["kind"] for e in data["train"]]
    assert len(kinds) == 120 and {"table", "unanswerable"} == set(kinds)
    assert 8 <= kinds.count("unanswerable") <= 40  # about one in six
    for e in data["train"] + data["dev"]:
        header, key = re.fullmatch(r"What (?:is|are) the (.+) of (.+)\?", e["question"]).groups()
        document = "\n\n".join(e["paragraphs"]).encode()
        assert e["phrasing"] == "seen"
        if e["kind"] == "unanswerable":
            assert e["long_answer"] is None and e["short_answers"] == []
            assert not re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", document.decode())
            continue
        rows, _ = table_cells(e)
        names = [c.lower() for c in rows[0]]
        (row,) = [r for r in rows[1:] if r[0] == key]
        want = row[names.index(header.lower())]
        (span,) = e["short_answers"]
        assert document[span["start_byte"]:span["end_byte"]].decode() == want
        assert want in values_of(key)
    for e in data["train"]:  # the hosts' own tables are left out
        assert not re.search(r"\| [ac]\d+ \|", "\n\n".join(e["paragraphs"]))


def table_rows(e):
    """The answer table's data rows, and the index of the row the short answer lies in."""
    document = "\n\n".join(e["paragraphs"]).encode()
    start, end = e["long_answer"]["start_byte"], e["long_answer"]["end_byte"]
    at = e["short_answers"][0]["start_byte"] - start
    lines = document[start:end].decode().split("\n")
    rows, offset, row_at = [], 0, None
    for line in lines:
        if is_row(line):
            if offset <= at < offset + len(line.encode()):
                row_at = len(rows)
            rows.append(line)
        offset += len(line.encode()) + 1
    return rows[1:], row_at - 1  # without the header


def test_long_tables_are_asked_about_below_their_first_third(tmp_path):
    short = [table_rows(e) for e in generate(tmp_path, "s", 5)["train"] if e["kind"] == "table"]
    assert all(3 <= len(rows) <= 9 for rows, _ in short)  # without --long_tables
    data = generate(tmp_path, "l", 5, "--long_tables", "1")
    asked = [table_rows(e) for e in data["train"] if e["kind"] == "table"]
    assert asked and all(len(rows) >= 10 for rows, _ in asked)
    assert all(at >= len(rows) // 3 - 1 for rows, at in asked)  # facts from the lower rows
    assert max(len(rows) for rows, _ in asked) > 9 and min(at for _, at in asked) >= 2


def test_rows_named_by_their_description(tmp_path):
    data = generate(tmp_path, "m", 6, "--by_meaning", "1")
    kinds = [e["kind"] for e in data["train"]]
    assert {"table", "table_meaning", "unanswerable"} == set(kinds)  # services have no description
    assert kinds.count("table_meaning") >= 40
    forms = [r"What is the (.+) of the (?:package|protocol) described as (.+)\?",
             r'What (.+) does the (?:package|protocol) described as "(.+)" have\?',
             r"Which (package|protocol) is described as (.+)\?"]
    asked_for_key = 0
    for e in data["train"] + data["dev"]:
        if e["kind"] != "table_meaning":
            continue
        ((header, what),) = [m.groups() for f in forms
                             for m in [re.fullmatch(f, e["question"])] if m]
        rows, document = table_cells(e)
        names = [c.lower() for c in rows[0]]
        (described,) = [i for i, n in enumerate(names)
                        if n in ("description", "summary", "what it is")]
        (row,) = [r for r in rows[1:] if r[described].rstrip(".") == what]
        column = 0 if header in ("package", "protocol") else names.index(header.lower())
        asked_for_key += column == 0
        (span,) = e["short_answers"]
        assert document[span["start_byte"]:span["end_byte"]].decode() == row[column]
        assert row[column] == row[0] or row[column] in values_of(row[0])
    assert asked_for_key > 0


def test_host_files_come_from_the_split(tmp_path):
    data = generate(tmp_path, "b", 2)
    for split, examples in data.items():
        hosts = {h for e in examples
                 for h in re.findall(r"host(\d+) file", " ".join(e["paragraphs"]))}
        assert hosts and all(split_of(f"pkg{h}/README.md") == split for h in hosts), (split, hosts)


def test_deterministic_for_a_seed(tmp_path):
    first = generate(tmp_path, "c", 3)
    assert first == generate(tmp_path, "d", 3)
    assert first != generate(tmp_path, "e", 4)


def test_no_records_is_an_error(tmp_path):
    (tmp_path / "empty").write_text("")
    hosts = write_hosts(tmp_path / "h", 3)
    run = subprocess.run([sys.executable, TOOL, "--out", str(tmp_path / "o"), "--dpkg_status",
                          str(tmp_path / "empty"), "--services", str(tmp_path / "empty"),
                          "--protocols", str(tmp_path / "missing")] + hosts,
                         capture_output=True, text=True)
    assert run.returncode != 0 and "no source has 12 records" in run.stderr
