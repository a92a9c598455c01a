#!/usr/bin/env python3
"""Question answering over README prose: cloze questions from package documentation, turned into
wh-questions by rules (Lewis et al., ACL 2019, "Unsupervised Question Answering by Cloze
Translation": its rule-based translation, with the clause around the answer as the cloze).

The man-page data (tools/make_manpage_dataset.py) asks about entries and NAME lines; a README
states its facts in sentences ("The image listens on port 8080."). Here a sentence of a README
(under /usr/share/doc) gives a fact: an answer inside it, the wh-phrase its type and its
neighbour words call for ("port 8080" -> "which port", "2 replicas" -> "how many replicas",
"629 s" -> "how long"), and the clause around it made a question: an auxiliary inverted ("The
default timeout is 30 s." -> "How long is the default timeout?"), "does" put before a third-person
verb ("The image listens on port 8080." -> "Which port does the image listen on?"), else the
wh-phrase fronted or left where the answer was ("the tests run on which port?").
  number        a number, with its unit or the noun it counts or names
  code          a `code` span or a "quoted" string
  name          a capitalised name inside a sentence
  table         a table's cell, asked by its column's header and its row's first cell ("What is
                the default of --drain_timeout_s?"; Markdown pipe and reST grid tables)
  unanswerable  another document's question, whose answer and half its content words this one lacks
A document is a run of consecutive paragraphs of one file around the answer's paragraph (the long
answer: the paragraph, a whole list as in NQ). Files are split by name (a hash of the path from
the package's folder on, as man pages are split): no test file is ever trained on; half the test
questions use wh-phrases training never sees ("what size" for "how large": field "phrasing").
Output: JSONL in the gold format `longqa eval` reads (docs/cli.md) plus "kind" and "phrasing".

Usage: tools/make_prose_dataset.py --out DIR [--seed 1] [--train N --dev N --test N]
                                   [--min_tokens 150 --max_tokens 900] [--max_files 400]
                                   [--min_file_tokens 0] FILE...
--min_file_tokens N leaves out files shorter than N words and punctuation marks: with --min_tokens
as large, every document is that long (a long-document set of real prose).
FILE: a README, .md, .rst or .txt file (gzipped or not), its package the directory under doc/.
"""
import gzip
import json
import os
import random
import re
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_manpage_dataset import (  # noqa: E402
    Page, Paragraph, document_around, gold, split_arguments, split_of, tokens)

# Wh-phrases: (seen, held out); {noun}: the word the answer counts or names.
WH = {
    "size": ("how large", "what size"),
    "time": ("how long", "how much time"),
    "percent": ("what percentage", "what share"),
    "year": ("when", "in what year"),
    "count": ("how many {noun}", "what number of {noun}"),
    "named": ("which {noun}", "what {noun}"),
    "thing": ("what", "what exactly"),
    "person": ("who", "which person"),
}
ANSWERABLE = ["number", "code", "name", "table"]  # in turn; "unanswerable": one question in six
SIZE_UNITS = r"(?:[KMGT]i?B|[kKMG]|bytes?)"
TIME_UNITS = r"(?:ms|s|secs?|seconds?|mins?|minutes?|hours?|h|days?|weeks?|months?|years?)"
NUMBER = re.compile(rf"(?<![\w.,/:#-])(\d{{1,3}}(?:,\d{{3}})+|\d+(?:\.\d+)?)"
                    rf"(\s?%|\s?{SIZE_UNITS}\b|\s{TIME_UNITS}\b|(?<=\d)ms\b)?"
                    r"(?![\w.:/-]?\w)")
CODE = re.compile(r"`([^`\n'\"]{1,60})`|\"([^\"\n'`]{2,40})\"")
NAME = re.compile(r"(?<=[a-z,] )((?:[A-Z][\w+.-]*[a-z0-9+]\s){0,3}[A-Z][\w+.-]*[a-z0-9+])(?![\w-])")
# Words that neither a counted nor a named noun can be.
FUNCTION = set("""a an the this that these those its it his her their our your my of to in on at
by for with from into onto as is are was were be been being and or nor but than then so if when
while about over under up down out off all every each any some no not only just also very more
most less least many much few first last next other another such same new old default can will
would should must may might could has have had does do did per via using use used see e.g i.e
etc here there which what who whose how why where one two three""".split())
AUX = {"is", "are", "was", "were", "can", "will", "would", "should", "must", "may", "might",
       "could", "has", "have", "had", "does", "do", "did"}
# An answer must be a whole argument of its clause: after a preposition or a verb, before the
# clause's end or a preposition (not "the `doc/` directory", "100% of the code", "Linux and").
PREPOSITIONS = {"in", "on", "at", "to", "for", "from", "with", "by", "as", "into", "onto", "via",
                "over", "under", "through", "after", "before", "since", "until", "within",
                "without", "about", "against", "between", "like", "than", "per", "behind"}
VERBS = {"use", "uses", "set", "run", "support", "provide", "contain", "need", "require", "call",
         "get", "give", "take", "make", "include", "return", "add", "install", "build", "create",
         "type", "enter", "see", "read", "write", "load", "print", "show", "try", "pass", "invoke"}
# Nouns a number or `code` is named by ("port 8080", "the option `-v`").
CATEGORIES = set("""port uid gid user group version release line step option flag command file
directory folder variable package image key field function module method class branch tag script
program tool library format mode level protocol layer size limit value type name section chapter
page column table header extension plugin service server socket path setting parameter argument
directive keyword macro attribute property event signal code error status target rule profile
device driver interface domain host address url endpoint database bucket namespace label
environment shell editor compiler interpreter backend frontend engine encoding algorithm cipher
certificate daemon unit timer hook filter pattern""".split())
# A clause's subject: a pronoun, or a noun phrase after a determiner; lower-cased when the clause
# is turned around.
PRONOUNS = {"it", "this", "that", "they", "you", "we", "he", "she", "one"}
DETERMINERS = {"the", "this", "that", "these", "those", "its", "their", "each", "every", "a", "an",
               "our", "your", "my", "his", "her", "all", "some", "any", "no"}
STARTERS = DETERMINERS | PRONOUNS
# Words that open an adverbial clause, not a subject ("If", "When", "Since").
SUBORDINATORS = {"if", "when", "since", "as", "after", "before", "although", "while", "because",
                 "once", "unless", "with", "without", "by", "from", "at", "in", "on", "for", "to",
                 "note", "please", "however", "also", "then", "now", "here", "there", "see"}
# Words ending in s that are not third-person verbs after a noun.
NOT_VERBS = {"is", "was", "has", "does", "its", "this", "thus", "as", "us", "plus", "less",
             "unless", "always", "sometimes", "perhaps", "whereas", "yes", "bus", "status",
             "address", "process", "access", "class", "alias", "series", "news", "options",
             "settings", "files", "users", "tests", "tools", "docs", "details", "values"}


def read_text(path):
    try:
        raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return None if "\0" in text or "<html" in text[:2000].lower() else text


def name_of(path):
    """(package, the file's name from its package on): a file under a doc/ folder is named
    from there ("podman/rootless.md.gz"), any other by its folder and file."""
    parts = os.path.normpath(path).split(os.sep)
    at = len(parts) - 1 - parts[::-1].index("doc") + 1 if "doc" in parts[:-2] else len(parts) - 2
    return parts[at], "/".join(parts[at:])


def paragraph_kind(text):
    lines = text.split("\n")
    if lines[0].lstrip().startswith(("```", "~~~")) or all(
            re.match(r"( {4}|\t)", line) for line in lines):
        return "code"
    if text.startswith("#") or (len(lines) == 2 and re.fullmatch(r"[=~^*-]{3,}", lines[1])):
        return "heading"
    if all(line.lstrip().startswith(("|", "+-", "+=")) for line in lines):
        return "table"
    if len(lines) == 1 and not re.search(r"[.!?:]$", text) and len(text.split()) <= 8:
        return "heading"
    return "prose"


def paragraphs_of(text):
    """Blank-line-separated blocks (a fenced code block stays one) with their kinds."""
    blocks, current, fenced = [], [], False
    for line in text.replace("\r\n", "\n").split("\n"):
        line = line.rstrip()
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if not line.strip() and not fenced:
            if current:
                blocks.append("\n".join(current))
            current = []
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    return [Paragraph(b, paragraph_kind(b)) for b in blocks if b.strip()]


def plain(text):
    """Text without the Markdown/reST markup a question should not carry: links, emphasis; reST
    roles and ``literals`` as `code`."""
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"(?::[\w:.-]+:)?``?([^`]+?)``?(?:_\b)?", r"`\1`", text)  # reST roles, ``code``
    text = re.sub(r"(\*\*|__|\*(?=\w)|(?<=\w)\*)", "", text)
    return re.sub(r"\s+", " ", text).strip()


def sentences_of(paragraph):
    """Sentences of a prose paragraph, each list item on its own."""
    items = re.split(r"\n\s*(?:[-*+]|\d+[.)])\s+", "\n" + paragraph.text)
    for item in items:
        for s in re.split(r"(?<=[.!?])\s+(?=[A-Z`\"(])", plain(item)):
            # Declarative sentences only: a capital or `code` first, a full stop last.
            if 5 <= len(s.split()) <= 40 and re.match(r"[A-Z`]", s) and s.endswith("."):
                yield s


def answers_in(sentence):
    """(kind, answer start, end, wh type, noun, absorbed start, absorbed end) of a sentence:
    absorbed is the part of the sentence the wh-phrase replaces (the answer and its noun)."""
    out = []
    for m in NUMBER.finditer(sentence):
        start, end = m.start(), m.end()
        unit = (m.group(2) or "").strip()
        before = sentence[:start].split()
        after = re.match(r"\s+([a-z][a-z-]+)", sentence[end:])
        prev = before[-1] if before else ""
        if re.search(SIZE_UNITS + "$", unit):
            out.append(("number", start, end, "size", "", start, end))
        elif re.fullmatch(TIME_UNITS, unit):
            out.append(("number", start, end, "time", "", start, end))
        elif unit == "%":
            out.append(("number", start, end, "percent", "", start, end))
        elif re.fullmatch(r"(19|20)\d\d", m.group(1)) and prev.lower() == "in":
            out.append(("number", start, end, "year", "", start - len(prev) - 1, end))
        elif after and after.group(1).endswith("s") and after.group(1) not in FUNCTION | AUX:
            noun = after.group(1)
            out.append(("number", start, end, "count", noun, start, end + after.end()))
        elif prev in CATEGORIES:
            out.append(("number", start, end, "named", prev,
                        *_with_determiner(sentence, start - len(prev) - 1, end)))
    for m in CODE.finditer(sentence):
        start, end = m.span(1) if m.group(1) else m.span(2)
        if m.group(0).count(" ") > 6:
            continue
        before = sentence[:m.start()].split()
        prev = before[-1] if before else ""
        if prev in CATEGORIES:
            out.append(("code", start, end, "named", prev,
                        *_with_determiner(sentence, m.start() - len(prev) - 1, m.end())))
        else:
            out.append(("code", start, end, "thing", "", m.start(), m.end()))
    for m in NAME.finditer(sentence):
        start, end = m.span(1)
        before = sentence[:start].split()
        if not before or before[-1].endswith((".", ":")) or m.group(1).isupper():
            continue
        if before[-1] == "by":
            out.append(("name", start, end, "person", "", start, end))
        else:
            out.append(("name", start, end, "thing", "", start, end))
    return out


def _with_determiner(sentence, start, end):
    """Widens an absorbed span leftwards over "the" or "a" before its noun."""
    m = re.search(r"\b(the|a|an)\s$", sentence[:start + 1 if sentence[start] == " " else start])
    return (m.start() - 1 if m else start, end)


def stem(verb):
    """The base form of a third-person verb ("listens" -> "listen", "watches" -> "watch")."""
    if verb.endswith("ies"):
        return verb[:-3] + "y"
    if re.search(r"(ss|sh|ch|x|z|o)es$", verb):
        return verb[:-2]
    return verb[:-1]


def lower_first(words):
    if words and words[0].lower() in STARTERS and (len(words[0]) == 1 or words[0][1:].islower()):
        words = [words[0].lower()] + words[1:]
    return words


def subject_then(words, k):
    """Whether words[:k] reads as a clause's subject: a pronoun, or a short noun phrase that
    starts with a determiner ("The default timeout", "Its cache")."""
    if not 1 <= k <= 5 or any(w.endswith((",", ";", ":")) for w in words[:k]):
        return False
    first = words[0]
    if k == 1 and first.lower() in PRONOUNS:
        return True
    # A capitalised first word may be a name or an adverb ("Huge thanks to"): left out.
    return first.lower() in DETERMINERS and all(
        w.lower() not in (FUNCTION | AUX) - {"of", "the", "a", "an", "default"} for w in words[1:k])


def question_of(sentence, answer, heldout):
    """The clause around the answer as a wh-question, or None where no clean one comes out:
    the answer as the subject ("What collects metrics?"), an auxiliary inverted ("How long is the
    default timeout?") or "does" before a third-person verb ("Which port does the image listen
    on?")."""
    _, a0, a1, wh_type, noun, s0, s1 = answer
    wh = WH[wh_type][1 if heldout else 0].format(noun=noun)
    # The clause: cut at ";", ":", dashes and commas; parentheses are dropped.
    cut = r";\s|:\s|,\s|\s[-\u2013\u2014]+\s"
    lo = max([m.end() for m in re.finditer(cut, sentence[:s0])], default=0)
    # After the answer also at a conjunction: "runs as uid 10001 and serves metrics".
    hi = min([m.start() for m in re.finditer(cut + r"|\s(?:and|or|but|which|that|while)\s",
                                               sentence[s1:])], default=len(sentence) - s1) + s1
    left = re.sub(r"\s*\([^()]*\)", "", sentence[lo:s0]).split()
    right = re.sub(r"\s*\([^()]*\)", "", sentence[s1:hi]).rstrip(" .!?,;").split()
    if left and not (left[-1].lower() in PREPOSITIONS | AUX | VERBS
                     or re.fullmatch(r"[a-z]{3,}(s|ed)", left[-1])):
        return None
    if left and right and right[0].lower() not in PREPOSITIONS:
        return None
    if not left:
        if not right or lo > 0 or not re.fullmatch(r"[a-z]+(s|ed)|" + "|".join(AUX), right[0]):
            return None
        words = [wh] + right
    else:
        aux = next((k for k, w in enumerate(left) if w.lower() in AUX), None)
        # A third-person verb, not a plural noun: what follows it opens its object or adverbial
        # ("listens on", "contains no") or is the answer ("uses `x`"), not a verb ("members
        # evaluate").
        verb = next((k for k, w in enumerate(left) if re.fullmatch(r"[a-z]{3,}s", w)
                     and not w.endswith(("ss", "us", "is")) and w not in NOT_VERBS
                     and (k + 1 == len(left) or left[k + 1].lower() in PREPOSITIONS | DETERMINERS
                          | {"not", "only", "also"} or left[k + 1].endswith("ly"))), None)
        if aux is not None and aux == len(left) - 1 and left[aux] in ("has", "have", "had") and (
                subject_then(left, aux)):  # the main verb ("The dashboard has 16 panels.")
            do = {"has": "does", "have": "do", "had": "did"}[left[aux]]
            words = [wh, do] + lower_first(left[:aux]) + ["have"] + right
        elif aux is not None and (verb is None or aux < verb) and subject_then(left, aux):
            words = [wh, left[aux].lower()] + lower_first(left[:aux]) + left[aux + 1:] + right
        elif verb is not None and subject_then(left, verb):
            words = [wh, "does"] + lower_first(left[:verb]) + [stem(left[verb])] + left[
                verb + 1:] + right
        else:
            return None
    question = " ".join(words)
    question = question[0].upper() + question[1:] + "?"
    answer_text = sentence[a0:a1]
    if not 4 <= len(question.split()) <= 25 or answer_text.lower() in question.lower():
        return None
    # Words to find the sentence by: one beside a noun subject, two beside a pronoun ("What does
    # it return?" has too few).
    found_by = len(content_words(" ".join(left + right)) - {noun})
    if found_by < 1 or found_by < 2 and any(w.lower() in PRONOUNS for w in left + right):
        return None
    if re.search(r"[`*\[\]|<>{}()\"'_=#]|https?:|\s[,.;:?]", question):
        return None
    return question


def find_once(answer_text, paragraph):
    """The one place the answer stands in its paragraph as a whole word (lines may wrap), or
    None where it stands in more than one (the gold span must be the sentence's)."""
    pattern = r"\s+".join(map(re.escape, answer_text.split()))
    hits = list(re.finditer(rf"(?<![\w.-]){pattern}(?![\w-])", paragraph))
    return hits[0] if len(hits) == 1 else None


# Tables: a row's cell under a column, asked by the column's header and the row's first cell
# ("| `--drain_timeout_s` | 30 |" under "| flag | default |" -> "What is the default of
# --drain_timeout_s?"); the long answer is the whole table, as NQ's.
TABLE_WH = ("what {be} the {header} of {key}", "what {header} does {key} have")
# Words no column's name holds ("fires when", "looks up the property"); "default" may.
HEADER_STOP = (FUNCTION | AUX) - {"default", "first", "last", "new"}
SEPARATOR = re.compile(r"\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*")


def _line_starts(lines):
    out, at = [], 0
    for line in lines:
        out.append(at)
        at += len(line) + 1
    return out


def _pipe_cells(line, at):
    """(start, end) in the paragraph of each cell of a Markdown table row starting at `at`;
    a "|" inside `code` or escaped does not end a cell."""
    bounds, quoted = [], False
    for k, c in enumerate(line):
        if c == "`":
            quoted = not quoted
        elif c == "|" and not quoted and (k == 0 or line[k - 1] != "\\"):
            bounds.append(k)
    if line.lstrip().startswith("|"):
        first, bounds = bounds[0] + 1, bounds[1:]
    else:
        first = 0
    cells = [(at + s, at + e)
             for s, e in zip([first] + [b + 1 for b in bounds], bounds + [len(line)])]
    return cells[:-1] if line.rstrip().endswith("|") else cells  # not the void after a closing "|"


def _pipe_rows(text):
    """A Markdown pipe table's rows, the header first, or None."""
    lines = text.split("\n")
    if len(lines) < 3 or not SEPARATOR.fullmatch(lines[1]) or not lines[0].lstrip().startswith("|"):
        return None
    return [[(text[s:e], (s, e)) for s, e in _pipe_cells(line, start)]
            for line, start in zip(lines, _line_starts(lines)) if not SEPARATOR.fullmatch(line)]


def _grid_cell(group, a, b):
    """The cell between the column borders at a and b of a grid table row's lines: its text, and
    its span where it stands on one line (None where it runs over several)."""
    parts = [(line[a + 1:b], start + a + 1) for line, start in group if line[a + 1:b].strip()]
    span = (parts[0][1], parts[0][1] + len(parts[0][0])) if len(parts) == 1 else None
    return " ".join(part.strip() for part, _ in parts), span


def _grid_rows(text):
    """A reST grid table's rows, its one header row first, or None (no header, merged cells)."""
    lines = text.split("\n")
    pad = len(lines[0]) - len(lines[0].lstrip())  # an indented table: offsets past the indent
    if not lines[0].lstrip().startswith("+-") or any(line[:pad].strip() for line in lines):
        return None
    lines, starts = [line[pad:] for line in lines], [s + pad for s in _line_starts(lines)]
    cuts = [k for k, c in enumerate(lines[0]) if c == "+"]
    rows, group = [], []
    for line, start in zip(lines[1:], starts[1:]):
        if line.startswith(("+-", "+=")):
            # Each border as the top one (no merged cell), after a row; "=" under the header only.
            if (line.rstrip() != lines[0].rstrip().replace("-", line[1]) or not group
                    or (line[1] == "=") != (not rows)):
                return None
            rows.append([_grid_cell(group, a, b) for a, b in zip(cuts, cuts[1:])])
            group = []
        elif all(k < len(line) and line[k] == "|" for k in cuts):
            group.append((line, start))
        else:
            return None
    return None if group else rows


def table_of(text):
    """A table paragraph as (header names, rows): a row is a list of cells, a cell (its text,
    its span in the paragraph or None where it runs over lines). Markdown pipe tables and reST
    grid tables with a header; None for any other."""
    rows = _pipe_rows(text) or _grid_rows(text)
    if not rows or len(rows) < 3 or any(len(r) != len(rows[0]) for r in rows) or len(rows[0]) < 2:
        return None
    header = [re.sub(r"[`*]", "", plain(c)).strip() for c, _ in rows[0]]
    return header, rows[1:]


def _cell_span(text, span):
    """A cell's span without its padding and the markup around it (`code`, **bold**)."""
    s, e = span
    while s < e and text[s] in " *`":
        s += 1
    while e > s and text[e - 1] in " *`":
        e -= 1
    return s, e


def table_facts(text, heldout):
    """(question, answer text, answer match) for each cell a table's header and first column
    name well enough to ask about."""
    table = table_of(text)
    if table is None or tokens(text) > 1000:
        return []
    header, rows = table
    keys = [re.sub(r"[`*\\]", "", plain(r[0][0])).strip() for r in rows]
    key_count = Counter(keys)
    out = []
    for row, key in zip(rows, keys):
        if key_count[key] > 1 or not re.fullmatch(r"[\w'-][\w .,:/+'-]{0,60}", key) or len(
                key.split()) > 8:
            continue
        for name, (_, span) in zip(header[1:], row[1:]):
            words = name.lower().split()
            # A noun phrase of up to three words names the column ("default", "min version").
            if span is None or not re.fullmatch(r"[A-Za-z][A-Za-z .-]{1,30}", name) or len(
                    words) > 3 or set(words) & HEADER_STOP:
                continue
            s, e = _cell_span(text, span)
            answer = text[s:e]
            if not re.search(r"\w", answer) or tokens(answer) > 12 or re.search(
                    r"[\[\]<>|`\\]|://|^[-\u2013\u2014?]+$", answer) or answer == key:
                continue
            plural = words[-1].endswith("s") and not words[-1].endswith(("ss", "us", "is"))
            label = name if name.isupper() else name.lower()
            question = TABLE_WH[1 if heldout else 0].format(
                be="are" if plural else "is", header=label, key=key)
            question = question[0].upper() + question[1:] + "?"
            if answer.lower() in question.lower():
                continue
            out.append((question, answer, re.compile(re.escape(answer)).match(text, s)))
    return out


_FACTS = {}


def all_facts(doc, heldout):
    """Every (kind, question, paragraph index, answer text, answer match) of a document, worked
    out once a document and phrasing."""
    key = (id(doc), heldout)
    if key not in _FACTS:
        _FACTS[key] = _facts(doc, heldout)
    return _FACTS[key]


def facts_of(doc, rng, heldout):
    """A document's facts in an order of the rng's."""
    out = list(all_facts(doc, heldout))
    rng.shuffle(out)
    return out


def _facts(doc, heldout):
    out = []
    for i, p in enumerate(doc.paragraphs):
        if p.kind == "table":
            out += [("table", q, i, a, where) for q, a, where in table_facts(p.text, heldout)]
        if p.kind != "prose":
            continue
        for sentence in sentences_of(p):
            for answer in answers_in(sentence):
                question = question_of(sentence, answer, heldout)
                text = sentence[answer[1]:answer[2]]
                where = find_once(text, p.text)
                if question and where and tokens(text) <= 20 and not re.search(r"[<>]|://", text):
                    out.append((answer[0], question, i, text, where))
    # A question the file answers in two places (two tables with one key) has no one answer.
    asked = Counter(f[1] for f in out)
    return [f for f in out if asked[f[1]] == 1]


def content_words(text):
    return {w for w in re.findall(r"[a-z][a-z-]{3,}", text.lower()) if w not in FUNCTION | AUX}


def absent_question(rng, doc, others, heldout):
    """Another document's question whose answer and half its content words or more are not in
    this one."""
    text = " ".join(p.text for p in doc.paragraphs).lower()
    for _ in range(20):
        other = rng.choice(others)
        if other is doc:
            continue
        facts = facts_of(other, rng, heldout)
        if not facts:
            continue
        _, question, _, answer, _ = facts[0]
        words = content_words(question)
        missing = [w for w in words if w not in text]
        if answer.lower() not in text and words and len(missing) * 2 >= len(words):
            return question
    return None


def example_of(example_id, kind, question, doc, rng, at, where, phrasing, args):
    """A gold example: the paragraphs around paragraph `at`; the short answer where `where`
    matched inside it (None: unanswerable)."""
    paragraphs, k = document_around(rng, doc, at, args.min_tokens, args.max_tokens)
    texts = [p.text for p in paragraphs]
    if kind == "unanswerable":
        return gold(example_id, kind, question, texts, None, "", phrasing)
    e = gold(example_id, kind, question, texts, k, "", phrasing)
    s = e["long_answer"]["start_byte"] + len(texts[k][:where.start()].encode())
    e["short_answers"] = [{"start_byte": s, "end_byte": s + len(where.group(0).encode())}]
    return e


def main():
    parser = split_arguments(__doc__)
    parser.add_argument("--max_files", type=int, default=400, help="at most N files a package")
    parser.add_argument("--min_file_tokens", type=int, default=0,
                        help="leave out files of fewer words and punctuation marks")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    paths = sorted(args.files, key=lambda path: (name_of(path)[1], path))  # not by where they lie
    rng.shuffle(paths)
    by_split = {"train": [], "dev": [], "test": []}
    per_package = {}
    for path in paths:
        package, name = name_of(path)
        if per_package.get(package, 0) >= args.max_files:
            continue
        text = read_text(path)
        if text is None or (args.min_file_tokens and tokens(text) < args.min_file_tokens):
            continue
        doc = Page(name, paragraphs_of(text))
        if sum(p.kind == "prose" for p in doc.paragraphs) < 2:
            continue
        per_package[package] = per_package.get(package, 0) + 1
        by_split[split_of(name)].append(doc)
    os.makedirs(args.out, exist_ok=True)
    for split in ("train", "dev", "test"):
        docs = by_split[split]
        wanted = getattr(args, split)
        n, asked = 0, set()  # each question once a file
        with open(os.path.join(args.out, f"{split}.jsonl"), "w") as out:
            # Each kind draws from the files that still hold an unasked fact of it; a kind is
            # dropped from the cycle once none does.
            holding = {k: [d for d in docs if any(f[0] == k for f in all_facts(d, False))]
                       for k in ANSWERABLE}
            kinds = [k for k in ANSWERABLE if holding[k]]
            for _ in range(wanted * 50):
                if n == wanted or not kinds:
                    break
                # One question in six unanswerable, the rest in turn over the kinds left.
                kind = "unanswerable" if n % 6 == 5 else kinds[(n - n // 6) % len(kinds)]
                heldout = split == "test" and rng.random() < 0.5
                phrasing = "heldout" if heldout else "seen"
                if kind == "unanswerable":
                    doc = rng.choice(docs)
                    question = absent_question(rng, doc, docs, heldout)
                    if not question:
                        continue
                    at = rng.randrange(len(doc.paragraphs))  # where the document is cut
                    example = example_of(f"{split}-{n}", kind, question, doc, rng, at, None,
                                         phrasing, args)
                else:
                    doc = rng.choice(holding[kind])
                    if not any(f[0] == kind and (doc.command, f[1]) not in asked
                               for f in all_facts(doc, False)):
                        holding[kind].remove(doc)
                        if not holding[kind]:
                            kinds.remove(kind)
                        continue
                    facts = [f for f in facts_of(doc, rng, heldout)
                             if f[0] == kind and (doc.command, f[1]) not in asked]
                    if not facts:
                        continue
                    _, question, at, _, where = facts[0]
                    asked.add((doc.command, question))
                    example = example_of(f"{split}-{n}", kind, question, doc, rng, at, where,
                                         phrasing, args)
                out.write(json.dumps(example) + "\n")
                n += 1
        print(f"{split}: {n} examples from {len(docs)} files")


if __name__ == "__main__":
    main()
