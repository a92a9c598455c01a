#!/usr/bin/env python3
"""Table questions in bulk, for training: Markdown pipe and reST grid tables built from this
machine's own records, each set among the paragraphs of a README, asked about as
tools/make_prose_dataset.py asks about a real table's cell ("What is the version of libssl3?").

The real tables under /usr/share/doc give 368 training questions (docs/demo-model.md, "Table
questions and round 3b"): too few for a model to learn which column a header names. Here the rows
come from records that hold real English names and values:
  packages   /var/lib/dpkg/status: version, section, priority, installed size, architecture,
             maintainer, source package
  services   /etc/services: port, protocol, alias
  protocols  /etc/protocols: number, alias, description
A table takes 3-9 rows (--long_tables: that share of tables 10-60 rows, asked about below their
first third, where a window no longer holds the header) and 2-5 of its source's columns in a
random order, under one of a few names for each column; it is written as a Markdown pipe table
(aligned or not, `code` keys) or a reST grid table, and set between two paragraphs of a host file
(a README, .md, .rst or .txt file of the split make_prose_dataset.py gives it, so no test file
hosts a table). The question and its answer are make_prose_dataset.table_facts' (the seen
wh-phrase only: the held-out one stays for the real tables of its test split). One question in
six is unanswerable: a row of the same source that the table lacks, asked by a column it has. The
long answer is the table, as NQ's.

--by_meaning S: a share S of the answerable package and protocol questions (kind "table_meaning")
name the row by what it is rather than by its key, as people ask about a README's flags table
("How many workers does the server run by default?" for the row `--workers`): the table then has
a description column (the package's one-line synopsis; the protocol's comment), and the question
quotes that description ("What is the version of the package described as GNU core
utilities?", "Which package is described as ...?" for the key itself).

Usage: tools/make_table_dataset.py --out DIR [--seed 1] [--train N --dev N --test N]
                                   [--min_tokens 150 --max_tokens 900] [--long_tables 0]
                                   [--by_meaning 0]
                                   [--dpkg_status F] [--services F] [--protocols F] FILE...
FILE: host documents, as for make_prose_dataset.py.
Output: JSONL in the gold format `longqa eval` reads (docs/cli.md), kinds "table",
"table_meaning" and "unanswerable".
"""
import json
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_manpage_dataset import (  # noqa: E402
    Page, Paragraph, document_around, gold, split_arguments, split_of)
from make_prose_dataset import name_of, paragraphs_of, read_text, table_facts  # noqa: E402

# Each source: the key column's names, then per column (field, its names).
PACKAGE_COLUMNS = [("Version", ["version"]), ("Section", ["section", "category"]),
                   ("Priority", ["priority"]),
                   ("Installed-Size", ["installed size", "size", "disk usage"]),
                   ("Architecture", ["architecture", "arch"]),
                   ("Maintainer", ["maintainer", "team"]), ("Source", ["source package"])]
SERVICE_COLUMNS = [("port", ["port", "port number"]), ("protocol", ["protocol", "transport"]),
                   ("alias", ["alias", "other name"])]
PROTOCOL_COLUMNS = [("number", ["number", "protocol number"]), ("alias", ["alias", "keyword"]),
                    ("description", ["description", "summary"])]
SOURCES = {
    "packages": (["package", "Package", "name"], PACKAGE_COLUMNS),
    "services": (["service", "Service", "name"], SERVICE_COLUMNS),
    "protocols": (["protocol", "Protocol", "name"], PROTOCOL_COLUMNS),
}


# How often each source is drawn: the few protocols less, so that a model reads their rows rather
# than learns them.
SHARE = {"packages": 0.55, "services": 0.3, "protocols": 0.15}

# --by_meaning: the column that says what a row is, its names, and how a question names a row by
# it ({what}: the description as the table has it) and the thing it asks for ({header} of the
# row, or {key}: the row's key cell).
MEANING = {"packages": ("Description", ["description", "summary", "what it is"], "package"),
           "protocols": ("description", ["description", "summary"], "protocol")}
MEANING_QUESTIONS = ["What is the {header} of the {noun} described as {what}?",
                     "What {header} does the {noun} described as \"{what}\" have?",
                     "Which {key} is described as {what}?"]


def kib(value, rng):
    n = int(value)
    return rng.choice([f"{n:,} KiB", f"{n} KiB", f"{n / 1024:.1f} MiB" if n >= 1024 else f"{n} kB"])


def read_file(path):
    """A record file's text; empty where it cannot be read (that source then has no records)."""
    try:
        return open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return ""


def read_packages(path):
    """dpkg's status file: one record a package, its fields as given (the maintainer's name
    without the address)."""
    records = {}
    for stanza in read_file(path).split("\n\n"):
        fields = dict(re.findall(r"^([\w-]+): (.*)$", stanza, re.M))
        name = fields.get("Package")
        if not name or "installed" not in fields.get("Status", "installed"):
            continue
        record = {k: fields[k] for k, _ in PACKAGE_COLUMNS if k in fields}
        if fields.get("Description"):  # its first line: the synopsis (--by_meaning)
            record["Description"] = fields["Description"].strip()
        if "Maintainer" in record:
            record["Maintainer"] = re.sub(r"\s*<[^>]*>", "", record["Maintainer"]).strip()
        if "Source" in record:
            record["Source"] = record["Source"].split()[0]
        records[name] = record
    return records


def read_services(path):
    """/etc/services: a service's port, its protocols ("tcp", "udp", "tcp and udp"), first alias."""
    records = {}
    for line in read_file(path).split("\n"):
        m = re.match(r"([\w.+-]+)\s+(\d+)/(\w+)((?:\s+[\w.+-]+)*)", line.split("#")[0])
        if not m:
            continue
        name, port, proto, aliases = m.groups()
        record = records.setdefault(name, {"port": port, "protocol": []})
        if record["port"] == port and proto not in record["protocol"]:
            record["protocol"].append(proto)
        if aliases.split():
            record.setdefault("alias", aliases.split()[0])
    for record in records.values():
        record["protocol"] = " and ".join(record["protocol"])
    return records


def read_protocols(path):
    """/etc/protocols: a protocol's number, its alias, the comment as its description."""
    records = {}
    for line in read_file(path).split("\n"):
        m = re.match(r"([\w.+-]+)\s+(\d+)\s*([\w.+-]*)\s*(?:#\s*(.*))?$", line)
        if not m:
            continue
        name, number, alias, comment = m.groups()
        record = {"number": number}
        if alias:
            record["alias"] = alias
        if comment and len(comment.split()) <= 8:
            record["description"] = comment.strip()
        records[name] = record
    return records


def cell_text(field, value, rng):
    return kib(value, rng) if field == "Installed-Size" else value


def build_table(rng, source, records, keys, meaning=None):
    """A table of these records' rows: (its text, its header's cells, the columns' (field, name)
    pairs). `meaning`: a (field, names) column the table must have."""
    key_names, columns = SOURCES[source]
    held = [c for c in columns if all(c[0] in records[k] for k in keys)]
    if not held or (meaning and not all(meaning[0] in records[k] for k in keys)):
        return None, None, None
    chosen = rng.sample(held, rng.randint(1, min(4, len(held))))
    if meaning and meaning[0] not in [f for f, _ in chosen]:
        chosen.insert(rng.randint(0, len(chosen)), meaning)
    named = [(field, rng.choice(names)) for field, names in chosen]
    header = [rng.choice(key_names)] + [n if key_names[0][0].islower() or rng.random() < 0.5
                                        else n.capitalize() for _, n in named]
    code_keys = rng.random() < 0.4
    rows = [[f"`{k}`" if code_keys else k] + [cell_text(f, records[k][f], rng) for f, _ in named]
            for k in keys]
    if meaning and any("|" in cell for row in rows for cell in row):
        return None, None, None  # a cell_at could not find
    grid = rng.random() < 0.3
    return (grid_table if grid else pipe_table)(rng, header, rows), header, named


def pipe_table(rng, header, rows):
    aligned = rng.random() < 0.5
    widths = [max(len(r[i]) for r in [header] + rows) if aligned else 0 for i in range(len(header))]
    def line(cells):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    rule = "| " + " | ".join("-" * max(3, w) for w in widths) + " |"
    return "\n".join([line(header), rule] + [line(r) for r in rows])


def grid_table(rng, header, rows):
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    def border(c):
        return "+" + "+".join(c * (w + 2) for w in widths) + "+"
    def line(cells):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    out = [border("-"), line(header), border("=")]
    for r in rows:
        out += [line(r), border("-")]
    return "\n".join(out)


def cell_at(table, row, column):
    """(start, end) of a data row's cell in a table build_table wrote (one line a row), without
    its padding or `code` marks."""
    lines = table.split("\n")
    line_no = 3 + 2 * row if table.startswith("+") else 2 + row
    line = lines[line_no]
    bars = [i for i, c in enumerate(line) if c == "|"]
    start, end = bars[column] + 1, bars[column + 1]
    while line[start] in " `":
        start += 1
    while line[end - 1] in " `":
        end -= 1
    offset = sum(len(x) + 1 for x in lines[:line_no])
    return offset + start, offset + end


def meaning_question(rng, source, records, table, header, named, keys, first_row):
    """A question that names a row below first_row by its description: (question, answer start
    and end in the table's text), or None."""
    field, _, noun = MEANING[source]
    column = 1 + [f for f, _ in named].index(field)
    described = [records[k][field].rstrip(".") for k in keys]
    row = rng.randrange(first_row, len(keys))
    what = described[row]
    if [d.lower() for d in described].count(what.lower()) > 1 or len(what.split()) > 12:
        return None
    asked = [c for c in range(1, len(header)) if c != column]
    form = rng.choice(MEANING_QUESTIONS if asked else MEANING_QUESTIONS[2:])
    target = 0 if "{key}" in form else rng.choice(asked)
    label = header[target] if header[target].isupper() else header[target].lower()
    question = form.format(header=label, noun=noun, what=what, key=noun)
    start, end = cell_at(table, row, target)
    if start >= end or table[start:end].lower() in question.lower():
        return None
    return question, start, end


def host_with_table(rng, host, table):
    """The host's paragraphs with the table set between two of them: (page, the table's index)."""
    paragraphs = list(host.paragraphs)
    at = rng.randrange(1, len(paragraphs) + 1)
    paragraphs.insert(at, Paragraph(table, "table"))
    return Page(host.command, paragraphs), at


def example(rng, example_id, sources, hosts, args):
    """One gold example (None where this draw gives no question)."""
    usable = [s for s in sources if len(sources[s]) >= 12]
    source = rng.choices(usable, [SHARE[s] for s in usable])[0]
    records = sources[source]
    names = sorted(records)
    # A long table runs past a window (256 tokens): its lower rows are read without the header
    # in view unless the model carries it (config table_header_tokens).
    long_table = args.long_tables > 0 and rng.random() < args.long_tables
    keys = rng.sample(names, rng.randint(10, min(60, len(names) - 3)) if long_table
                      else rng.randint(3, 9))
    meaning = (args.by_meaning > 0 and source in MEANING and rng.random() < args.by_meaning and
               MEANING[source][:2])
    table, header, named = build_table(rng, source, records, keys, meaning or None)
    if table is None:
        return None
    unanswerable = rng.random() < 1 / 6
    if meaning and not unanswerable:
        asked = meaning_question(rng, source, records, table, header, named, keys,
                                 len(keys) // 3 if long_table else 0)
        if asked is None:
            return None
        kind, (question, start, end) = "table_meaning", asked
    else:
        if unanswerable:
            # The same columns over rows the table lacks: a question it cannot answer.
            others = [k for k in names
                      if k not in keys and all(f in records[k] for f, _ in named)]
            if not others:
                return None
            asked_about = pipe_table(rng, header,
                                     [[k] + [cell_text(f, records[k][f], rng) for f, _ in named]
                                      for k in rng.sample(others, min(3, len(others)))])
            facts = table_facts(asked_about, heldout=False)
        else:
            facts = table_facts(table, heldout=False)
        if not facts:
            return None
        if long_table and not unanswerable:  # a row below the first window's reach, mostly
            facts = facts[len(facts) // 3:]
        question, answer, where = rng.choice(facts)
        kind, start, end = "table", where.start(), where.end()
    host = rng.choice(hosts)
    page, at = host_with_table(rng, host, table)
    paragraphs, k = document_around(rng, page, at, args.min_tokens, args.max_tokens)
    texts = [p.text for p in paragraphs]
    if unanswerable:
        if answer.lower() in "\n".join(texts).lower():
            return None
        return gold(example_id, "unanswerable", question, texts, None, "", "seen")
    e = gold(example_id, kind, question, texts, k, "", "seen")
    s = e["long_answer"]["start_byte"] + len(table[:start].encode())
    e["short_answers"] = [{"start_byte": s, "end_byte": s + len(table[start:end].encode())}]
    return e


def main():
    parser = split_arguments(__doc__)
    parser.add_argument("--dpkg_status", default="/var/lib/dpkg/status")
    parser.add_argument("--services", default="/etc/services")
    parser.add_argument("--protocols", default="/etc/protocols")
    parser.add_argument("--long_tables", type=float, default=0.0,
                        help="share of tables with 10-60 rows (the rest: 3-9)")
    parser.add_argument("--by_meaning", type=float, default=0.0,
                        help="share of package and protocol questions naming a row by its "
                        "description (kind table_meaning)")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    sources = {"packages": read_packages(args.dpkg_status),
               "services": read_services(args.services),
               "protocols": read_protocols(args.protocols)}
    if not any(len(r) >= 12 for r in sources.values()):
        sys.exit("make_table_dataset: no source has 12 records or more")
    hosts = {"train": [], "dev": [], "test": []}
    for path in sorted(args.files, key=lambda p: (name_of(p)[1], p)):
        text = read_text(path)
        if text is None:
            continue
        name = name_of(path)[1]
        paragraphs = [p for p in paragraphs_of(text) if p.kind != "table"]
        if sum(p.kind == "prose" for p in paragraphs) >= 2:
            hosts[split_of(name)].append(Page(name, paragraphs))
    os.makedirs(args.out, exist_ok=True)
    for split in ("train", "dev", "test"):
        wanted, n = getattr(args, split), 0
        if wanted and not hosts[split]:
            sys.exit(f"make_table_dataset: no host file falls in the {split} split")
        with open(os.path.join(args.out, f"{split}.jsonl"), "w") as out:
            for _ in range(wanted * 50):
                if n == wanted:
                    break
                e = example(rng, f"{split}-{n}", sources, hosts[split], args)
                if e is not None:
                    out.write(json.dumps(e) + "\n")
                    n += 1
        print(f"{split}: {n} examples, hosts from {len(hosts[split])} files")


if __name__ == "__main__":
    main()
