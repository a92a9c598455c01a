#!/usr/bin/env python3
"""Contrast pairs for the no-answer decision: each one-hop row of a gold set, and beside it the
same document with the sentence that holds the answer deleted, asked the same question and marked
unanswerable. The person stays in the document (their other sentences do), so only reading
whether the asked attribute is there tells the two apart: the mistake sessions 73-75 found in the
kept ETC model ("Which occupation did Holso Kesib have?" answered "harbour" from "Born in Momun in
1885, Holso Kesib grew up near the harbour.").

A row is skipped when its answer could still be read from what is left: a remaining paragraph
that holds the answer's text and a piece of the person's name (the question's capitalised words
found in the gold paragraph), or an answer that crosses a sentence boundary.

Usage: tools/contrast_rows.py IN OUT [--first N] [--last M] [--without_only]
  IN, OUT  gold JSONL (tools/make_dataset.py's layout: byte offsets into the paragraphs joined by
           two newlines); rows first..last of IN are read (Python slice bounds)
  --without_only  write only the rows made unanswerable, not the one-hop rows beside them
"""
import argparse
import json
import re
import sys

SEPARATOR = "\n\n"
# A sentence ends at . ! or ? (a closing quote may follow) before a space and a capital letter.
SENTENCE_END = re.compile(r'(?<=[.!?])"?\s+(?=[A-Z"])')


def paragraph_starts(paragraphs):
    starts, offset = [], 0
    for text in paragraphs:
        starts.append(offset)
        offset += len(text.encode()) + len(SEPARATOR.encode())
    return starts


def sentences(text):
    """(start, end) byte ranges of the sentences of one paragraph, each without the space after."""
    data = text.encode()
    ranges, begin = [], 0
    for match in SENTENCE_END.finditer(text):
        end = len(text[:match.start()].encode())
        if text[match.start():match.end()].startswith('"'):
            end += 1  # the closing quote belongs to the sentence it closes
        ranges.append((begin, end))
        begin = len(text[:match.end()].encode())
    ranges.append((begin, len(data)))
    return ranges


def mentions(text, word):
    return re.search(rf"\b{re.escape(word)}\b", text) is not None


def name_pieces(question, paragraph):
    # Capitalised words but the question's first ("Which"), as "how did Moke Lenwi ..." keeps Moke.
    words = [m.group() for m in re.finditer(r"[A-Z][a-z]+", question) if m.start() > 0]
    return [w for w in words if mentions(paragraph, w)]


def without_answer(row):
    """The row with its answer's sentence deleted, as an unanswerable row; None when unsafe."""
    if row.get("kind") != "one_hop" or not row.get("short_answers") or not row.get("long_answer"):
        return None
    paragraphs = row["paragraphs"]
    starts = paragraph_starts(paragraphs)
    gold = row["long_answer"]["start_byte"]
    if gold not in starts:
        return None
    index = starts.index(gold)
    paragraph = paragraphs[index]
    data = paragraph.encode()
    span = row["short_answers"][0]
    first, last = span["start_byte"] - gold, span["end_byte"] - gold
    answer = data[first:last].decode()
    names = name_pieces(row["question"], paragraph)
    if not answer.strip() or not names:
        return None
    holding = [r for r in sentences(paragraph) if r[0] <= first and last <= r[1]]
    if not holding:
        return None  # the answer crosses a sentence boundary
    begin, end = holding[0]
    kept = (data[:begin] + data[end:]).decode().strip()
    rest = paragraphs[:index] + ([kept] if kept else []) + paragraphs[index + 1:]
    for text in rest:
        if answer in text and any(mentions(text, n) for n in names):
            return None
    out = {k: v for k, v in row.items() if k not in ("supporting", "paragraphs")}
    out.update(example_id=row["example_id"] + "-without", kind="unanswerable", paragraphs=rest,
               long_answer=None, short_answers=[], yes_no_answer="NONE")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--last", type=int)
    parser.add_argument("--without_only", action="store_true")
    args = parser.parse_args()
    lines = open(args.input).readlines()[args.first:args.last]
    pairs = skipped = 0
    with open(args.output, "w") as out:
        for line in lines:
            row = json.loads(line)
            negative = without_answer(row)
            if negative is None:
                skipped += row.get("kind") == "one_hop"
                continue
            if not args.without_only:
                out.write(json.dumps(row) + "\n")
            out.write(json.dumps(negative) + "\n")
            pairs += 1
    print(f"{pairs} one-hop rows contrasted, {skipped} skipped (answer still readable or "
          f"unplaceable), of {len(lines)} rows", file=sys.stderr)


if __name__ == "__main__":
    main()
