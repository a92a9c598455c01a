#!/usr/bin/env python3
"""Question answering over real English: questions and gold spans made from Debian's man pages.

The synthetic world of tools/make_dataset.py teaches spans but not English (the demo model
abstains on every question about the README: docs/demo-model.md). Man pages are real technical
prose in the shape users ask about: a NAME line, paragraphs, and lists of entries (an option or
a term, then its description). Their structure gives natural questions with known answers:
  option_what   "What does the --all option of ls do?"  -> the entry; short: its first sentence
  option_which  "Which option of ls lists directories themselves?"  -> the entry; short: its tag
  name_what     "What does ls do?"  -> the NAME paragraph; short: the description
  name_which    "Which command can I use to list directory contents?"  -> NAME; short: the name
  term_what     "What is LS_COLORS in ls?"  -> a non-option entry (file, variable, command)
  unanswerable  an option or command of another page, absent from the document
A document is a run of consecutive paragraphs of one page around the answer (NAME first), of
--min_tokens to --max_tokens words and punctuation marks, written as `man` prints it or (a
--markdown share) as a README would: headings, `code`, wrapped lines, entries in lists or tables. Pages are split by name (a hash): no
test page is ever trained on; half the test questions use phrasings training never sees (field
"phrasing": "seen" or "heldout"). Output: JSONL in the gold format `longqa eval` reads
(docs/cli.md) plus "kind", as tools/make_dataset.py writes it.

Usage: tools/make_manpage_dataset.py --out DIR [--seed 1] [--train N --dev N --test N]
                                     [--min_tokens 150 --max_tokens 900] [--max_pages N]
                                     [--markdown 0.5] PAGE...
PAGE: a man page (rendered with `man -l`), or its rendering as text (a .txt file).
"""
import argparse
import hashlib
import json
import os
import random
import re
import subprocess
import textwrap
from dataclasses import dataclass, field

# Phrasings: (seen, held out). {cmd} is the page's command, {flag} an option, {desc} a description.
OPTION_WHAT = (["What does the {flag} option of {cmd} do?", "What does {flag} do in {cmd}?",
                "What is the {flag} option of {cmd} for?", "What happens when {cmd} is run with {flag}?"],
               ["What is {flag} used for in {cmd}?", "Explain the {flag} flag of {cmd}."])
# desc: a verb in the third person ("prints the version") / an imperative ("print the version").
OPTION_WHICH_3RD = (["Which option of {cmd} {desc}?", "Which {cmd} option {desc}?"],
                    ["What flag of {cmd} {desc}?"])
OPTION_WHICH_IMP = (["Which option of {cmd} do I use to {desc}?",
                     "Which {cmd} option should be used to {desc}?",
                     "How do I tell {cmd} to {desc}?"],
                    ["What flag makes {cmd} {desc}?"])
NAME_WHAT = (["What does {cmd} do?", "What is {cmd}?", "What is the {cmd} command for?"],
             ["What is {cmd} used for?", "Describe the {cmd} program."])
NAME_WHICH = (["Which command can I use to {desc}?", "What program is used to {desc}?",
               "Which tool should I use to {desc}?"],
              ["What is the name of the command that can {desc}?"])
TERM_WHAT = (["What is {term} in {cmd}?", "What does {term} mean for {cmd}?"],
             ["Explain {term} in {cmd}."])
KINDS = ["option_what", "option_what", "option_which", "option_which", "name_what", "name_which",
         "term_what", "unanswerable"]

# Imperative verbs that start NAME lines and option descriptions ("list directory contents").
IMPERATIVES = set("""
accept access add adjust allow alter append apply archive assemble attach authenticate build
calculate call cancel change check choose clean clear close collect combine compare compile
compress compute concatenate configure connect control convert copy count create debug decode
decompress decrypt define delete describe detach determine disable discard display do download
dump edit emulate enable encode encrypt enter erase evaluate examine exclude execute exit expand
export extract fetch filter find fix follow force format generate get grep handle hide identify
ignore import include indent initialize insert inspect install invoke join keep kill launch limit
link list load locate lock log look make manage manipulate mark merge modify monitor mount move
normalize omit open output override pack parse pass patch perform play preserve prevent print
process produce prompt query quit read rebuild receive record reduce refresh register reload
remove rename render reorder repair replace report request reset resize resolve restore
retrieve return reverse rewrite run save scan search select send serve set setup show shrink
shut sign simulate skip sort specify split start stop store strip submit substitute suppress
switch synchronize tell test trace transfer transform translate treat truncate turn unmount
unpack update upgrade upload use validate verify view wait watch wrap write zip""".split())
# Descriptions that do not read as a clause of a question ("with -l, print ...", "like -l").
SKIP_PREFIXES = ("with ", "like ", "same as", "equivalent", "likewise", "see ", "this ", "the ",
                 "a ", "an ", "if ", "when ", "by default", "alias", "deprecated", "synonym",
                 "obsolete", "ignored", "no-op", "for ", "in ", "as ")
WORD = re.compile(r"\w+|[^\w\s]")
# A term entry's tag: one word, a variable, a file ("LS_COLORS", "~/.ssh/config").
TERM = re.compile(r"^[\w$~./][\w$~./-]*[\w/]$")
FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z0-9][\w-]*)")


def tokens(text):
    """Words and punctuation marks: about a WordPiece token each for English prose."""
    return len(WORD.findall(text))


@dataclass
class Paragraph:
    text: str
    kind: str  # "heading", "name", "entry", "prose"
    tag: str = ""  # an entry's tag ("-a, --all"), a NAME line's names ("gzip, gunzip")
    body: str = ""  # an entry's description, a NAME line's description


@dataclass
class Page:
    command: str
    paragraphs: list = field(default_factory=list)


def squash(text):
    return re.sub(r"\s+", " ", text).strip()


def render(path):
    """A man page as `man` prints it 2,000 columns wide, as plain text (a .txt file: as it is)."""
    if path.endswith(".txt"):
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    env = dict(os.environ, MANWIDTH="2000", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="")
    try:
        out = subprocess.run(["man", "-E", "UTF-8", "-l", path], env=env, capture_output=True,
                             timeout=20, check=False).stdout
        # col -b: man's overstrikes (bold, underline) to plain characters.
        return subprocess.run(["col", "-bx"], input=out, capture_output=True, timeout=20,
                              check=False).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired):
        return ""


def indent(line):
    return len(line) - len(line.lstrip(" "))


def parse_page(text, entry_separator=" "):
    """A rendered man page as paragraphs: section headings, the NAME line, entries and prose."""
    lines = text.replace("\t", "        ").split("\n")
    # The first and last lines are the page's header and footer ("LS(1) ... LS(1)").
    lines = lines[1:-2] if len(lines) > 3 else []
    blocks, block = [], []
    for line in lines + [""]:
        if line.strip():
            block.append(line.rstrip())
        elif block:
            blocks.append(block)
            block = []
    page = Page(command="")
    section = ""
    for block in blocks:
        first = block[0]
        if indent(first) == 0:  # a section heading, maybe with its first paragraph below it
            section = squash(first)
            page.paragraphs.append(Paragraph(section.capitalize() if len(section) > 3 else section,
                                             "heading"))
            block = block[1:]
            if not block:
                continue
            first = block[0]
        rest = block[1:]
        if (indent(first) < 5 and rest and all(indent(line) > indent(first) for line in rest)
                and not first.strip().startswith("-") and section != "NAME"):
            # A subsection heading (indent 3) over its first paragraph.
            page.paragraphs.append(Paragraph(squash(first), "heading"))
            block = block[1:]
            first = block[0]
        if section == "NAME":
            line = squash(" ".join(block))
            m = re.match(r"^(.+?) +[-\u2010\u2013\u2014] +(.+)$", line)
            if m and not page.command:
                names = m.group(1)
                page.command = names.split(",")[0].strip()
                page.paragraphs.append(Paragraph(f"{names} - {m.group(2)}", "name", names,
                                                 m.group(2)))
            continue
        rest = block[1:]
        if rest and all(indent(line) > indent(first) for line in rest):
            tag, body = squash(first), squash(" ".join(rest))
        else:
            inline = re.match(r"^ +(\S.*?) {2,}(\S.*)$", first)
            if inline and not rest and len(inline.group(1)) < 30:
                tag, body = squash(inline.group(1)), squash(inline.group(2))
            else:
                page.paragraphs.append(Paragraph(squash(" ".join(block)), "prose"))
                continue
        if len(tag) > 60 or not body:
            page.paragraphs.append(Paragraph(squash(" ".join(block)), "prose"))
            continue
        page.paragraphs.append(Paragraph(f"{tag}{entry_separator}{body}", "entry", tag, body))
    return page


def first_clause(text, max_words):
    """The description's first sentence or clause without its full stop, if short enough."""
    clause = re.split(r"(?<=[.;:])\s|;", text)[0].rstrip(" .;:")
    n = len(clause.split())
    return clause if 0 < n <= max_words else ""


def as_question_clause(desc):
    """("3rd", "prints the version") or ("imp", "print the version") or None."""
    clause = first_clause(desc, 14)
    if not clause or "?" in clause or len(clause.split()) < 3:
        return None
    lowered = clause[0].lower() + clause[1:]
    if lowered.startswith(SKIP_PREFIXES) or FLAG.search(lowered):
        return None
    first = lowered.split()[0]
    if not first.isalpha():
        return None
    if lowered.startswith("do not ") and lowered.split()[2:3] and lowered.split()[2] in IMPERATIVES:
        return ("imp", "not " + lowered[len("do not "):])
    if first in IMPERATIVES:
        return ("imp", lowered)
    if first.endswith("s") and first[:-1] in IMPERATIVES | {w[:-1] for w in IMPERATIVES}:
        return ("3rd", lowered)
    if first.endswith("es") and first[:-2] in IMPERATIVES:
        return ("3rd", lowered)
    return None


def option_flags(tag):
    if not tag.startswith("-"):
        return []
    return FLAG.findall(tag.split("=")[0] if "=" in tag else tag)


def pick(rng, phrasings, heldout):
    seen, held = phrasings
    return rng.choice(held if heldout else seen)


def questions_of(page, rng, heldout):
    """Every (kind, question, answer paragraph index, short answer text or "") of a page."""
    out = []
    cmd = page.command
    flag_counts = {}
    for p in page.paragraphs:
        if p.kind == "entry":
            for f in option_flags(p.tag):
                flag_counts[f] = flag_counts.get(f, 0) + 1
    for i, p in enumerate(page.paragraphs):
        if p.kind == "name":
            out.append(("name_what", pick(rng, NAME_WHAT, heldout).format(cmd=cmd), i, p.body))
            clause = as_question_clause(p.body)
            if clause and clause[0] == "imp":
                q = pick(rng, NAME_WHICH, heldout).format(desc=clause[1])
                out.append(("name_which", q, i, cmd))
        elif p.kind == "entry":
            flags = [f for f in option_flags(p.tag) if flag_counts.get(f) == 1]
            short = first_clause(p.body, 25)
            if flags:
                flag = rng.choice(flags)
                q = pick(rng, OPTION_WHAT, heldout).format(flag=flag, cmd=cmd)
                out.append(("option_what", q, i, short))
                clause = as_question_clause(p.body)
                if clause:
                    table = OPTION_WHICH_3RD if clause[0] == "3rd" else OPTION_WHICH_IMP
                    q = pick(rng, table, heldout).format(desc=clause[1], cmd=cmd)
                    out.append(("option_which", q, i, p.tag))
            elif TERM.match(p.tag) and p.tag != cmd:
                q = pick(rng, TERM_WHAT, heldout).format(term=p.tag, cmd=cmd)
                out.append(("term_what", q, i, short))
    return out


def document_around(rng, page, answer, min_tokens, max_tokens):
    """Consecutive paragraphs around `answer` (its index), NAME first: (them, answer's index)."""
    target = rng.randint(min_tokens, max_tokens)
    lo, hi = answer, answer + 1
    size = tokens(page.paragraphs[answer].text)
    while size < target and (lo > 0 or hi < len(page.paragraphs)):
        grow_up = lo > 0 and (hi >= len(page.paragraphs) or rng.random() < 0.5)
        nxt = lo - 1 if grow_up else hi
        size += tokens(page.paragraphs[nxt].text)
        if size > max_tokens:
            break
        lo, hi = (nxt, hi) if grow_up else (lo, nxt + 1)
    chosen = list(range(lo, hi))
    name = next((i for i, p in enumerate(page.paragraphs) if p.kind == "name"), None)
    if name is not None and name < lo:
        chosen = [name] + chosen
    return [page.paragraphs[i] for i in chosen], chosen.index(answer)


def plain_document(paragraphs, answer):
    """The paragraphs as `man` prints them: (texts, the answer's index, where its entry starts)."""
    return [p.text for p in paragraphs], answer, 0


def markdown_document(rng, paragraphs, answer):
    """The paragraphs as a README writes them: "## Heading", `code` in prose, lines wrapped at 100
    columns, and each run of entries one list or table (one paragraph between blank lines, as in
    this repository's docs). Returns (texts, the answer's index, where its entry starts in it)."""
    table = rng.random() < 0.4
    header = rng.choice([("option", "meaning"), ("name", "description"), ("flag", "what it does")])
    texts, at, entry_from, run = [], None, 0, []

    def flush():
        nonlocal at, entry_from
        if not run:
            return
        block = f"| {header[0]} | {header[1]} |\n| --- | --- |\n" if table else ""
        for i, p in run:
            if i == answer:
                at, entry_from = len(texts), len(block)
            line = f"| `{p.tag}` | {p.body} |" if table else textwrap.fill(
                f"- `{p.tag}`: {p.body}", 100, subsequent_indent="  ", break_long_words=False,
                break_on_hyphens=False)
            block += line + "\n"
        texts.append(block.rstrip("\n"))
        run.clear()

    for i, p in enumerate(paragraphs):
        if p.kind == "entry":
            run.append((i, p))
            continue
        flush()
        if i == answer:
            at, entry_from = len(texts), 0
        text = p.text
        if p.kind == "heading":
            text = "## " + text
        elif p.kind == "prose":
            text = FLAG.sub(lambda m: f"`{m.group(1)}`", text)
        texts.append(text if p.kind == "heading" else textwrap.fill(
            text, 100, break_long_words=False, break_on_hyphens=False))
    flush()
    return texts, at, entry_from


def gold(example_id, kind, question, texts, answer, short, phrasing, entry_from=0):
    """A gold example; the short answer is looked for from `entry_from` in the answer's text, and
    may be wrapped over lines there."""
    example = {"example_id": example_id, "kind": kind, "question": question,
               "paragraphs": texts, "long_answer": None, "short_answers": [],
               "yes_no_answer": "NONE", "phrasing": phrasing}
    if answer is None:
        return example
    start = sum(len(p.encode()) + 2 for p in texts[:answer])
    text = texts[answer]
    example["long_answer"] = {"start_byte": start, "end_byte": start + len(text.encode())}
    if short and (short[0].isalnum() or short[0] in "-~/$") and tokens(short) <= 30:
        m = re.compile(r"\s+".join(map(re.escape, short.split()))).search(text, entry_from)
        if m:
            s = start + len(text[:m.start()].encode())
            example["short_answers"] = [
                {"start_byte": s, "end_byte": s + len(m.group(0).encode())}]
    return example


def written(rng, paragraphs, answer, markdown_share):
    if markdown_share > 0 and rng.random() < markdown_share:
        return markdown_document(rng, paragraphs, answer)
    return plain_document(paragraphs, answer)


def split_of(command):
    h = int(hashlib.md5(command.encode()).hexdigest()[:8], 16) % 10
    return "test" if h == 0 else "dev" if h == 1 else "train"


def absent_question(rng, page, others, heldout):
    """A question about an option or command that the document never mentions."""
    text = " ".join(p.text for p in page.paragraphs)
    for _ in range(20):
        other = rng.choice(others)
        if rng.random() < 0.7:
            flags = [f for p in other.paragraphs if p.kind == "entry" for f in option_flags(p.tag)]
            if not flags:
                continue
            flag = rng.choice(flags)
            if re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text):
                continue
            return pick(rng, OPTION_WHAT, heldout).format(flag=flag, cmd=page.command)
        if other.command and other.command not in text:
            return pick(rng, NAME_WHAT, heldout).format(cmd=other.command)
    return None


def split_arguments(doc):
    """A parser with the options the real-text generators share: where to write, the seed,
    examples per split, document length in words and punctuation marks."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--train", type=int, default=6000)
    parser.add_argument("--dev", type=int, default=200)
    parser.add_argument("--test", type=int, default=200)
    parser.add_argument("--min_tokens", type=int, default=150)
    parser.add_argument("--max_tokens", type=int, default=900)
    return parser


def main():
    parser = split_arguments(__doc__)
    parser.add_argument("--max_pages", type=int, default=0, help="use at most N pages (0: all)")
    parser.add_argument("--markdown", type=float, default=0.5,
                        help="share of documents written as Markdown (lists, tables, `code`)")
    parser.add_argument("--max_family", type=int, default=10,
                        help="at most N pages whose file names share a first word (gcloud-*)")
    parser.add_argument("pages", nargs="+")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    paths = sorted(args.pages)
    rng.shuffle(paths)
    by_split = {"train": [], "dev": [], "test": []}
    names, families = set(), {}
    for path in paths:
        if args.max_pages and len(names) == args.max_pages:
            break
        # Families of pages (gcloud's 16,000, git's 150) would crowd out the rest.
        family = re.split(r"[-_. ]", os.path.basename(path))[0]
        if families.get(family, 0) >= args.max_family:
            continue
        page = parse_page(render(path), rng.choice([" ", ": ", " - "]))
        if not page.command or page.command in names or len(page.paragraphs) < 3:
            continue
        names.add(page.command)
        families[family] = families.get(family, 0) + 1
        by_split[split_of(page.command)].append(page)
    os.makedirs(args.out, exist_ok=True)
    for split in ("train", "dev", "test"):
        pages = by_split[split]
        wanted = getattr(args, split)
        with open(os.path.join(args.out, f"{split}.jsonl"), "w") as out:
            n = 0
            for _ in range(wanted * 50):
                if n == wanted or not pages:
                    break
                page = rng.choice(pages)
                heldout = split == "test" and rng.random() < 0.5
                kind = KINDS[n % len(KINDS)]
                if kind == "unanswerable":
                    question, short = absent_question(rng, page, pages, heldout), ""
                    if not question:
                        continue
                    answer = rng.randrange(len(page.paragraphs))  # where the document is cut
                else:
                    candidates = [q for q in questions_of(page, rng, heldout) if q[0] == kind]
                    if not candidates:
                        continue
                    _, question, answer, short = rng.choice(candidates)
                paragraphs, at = document_around(rng, page, answer, args.min_tokens,
                                                 args.max_tokens)
                texts, at, entry_from = written(rng, paragraphs, at, args.markdown)
                example = gold(f"{split}-{n}", kind, question, texts,
                               None if kind == "unanswerable" else at, short,
                               "heldout" if heldout else "seen", entry_from)
                out.write(json.dumps(example) + "\n")
                n += 1
        print(f"{split}: {n} examples from {len(pages)} pages")


if __name__ == "__main__":
    main()
