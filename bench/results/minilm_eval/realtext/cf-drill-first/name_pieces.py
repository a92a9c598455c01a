#!/usr/bin/env python3
"""Session 54: the WordPiece pieces of make_dataset.py's names (models/demo's tokenizer.json,
MiniLM's): pieces a name, distinct pieces in 2,000 names, and how many of the pieces of the test
split's names (HELDOUT_SYLLABLES) ever occur in training names made of SYLLABLES or of letters
(--names letters). Run from the repository root with the test venv's Python."""
import collections
import random
import sys

from tokenizers import Tokenizer

sys.path.insert(0, "tools")
import make_dataset as md  # noqa: E402

tokenizer = Tokenizer.from_file("models/demo/tokenizer.json")
tokenizer.no_padding()
tokenizer.no_truncation()
rng = random.Random(1)
kinds = {"training names, SYLLABLES": lambda: md.word(md.name_pieces(rng, md.SYLLABLES, 2)),
         "test names, HELDOUT_SYLLABLES":
             lambda: md.word(md.name_pieces(rng, md.HELDOUT_SYLLABLES, 2)),
         "training names, --names letters": lambda: md.word(md.letters_pieces(rng, 2))}
pieces = {}
print("| names | pieces a name | distinct pieces in 2,000 | e.g. |")
print("| --- | --- | --- | --- |")
for kind, make in kinds.items():
    split = [tokenizer.encode(make(), add_special_tokens=False).tokens for _ in range(2000)]
    pieces[kind] = collections.Counter(p for s in split for p in s)
    print(f"| {kind} | {sum(map(len, split)) / len(split):.2f} | {len(pieces[kind])} | "
          f"{', '.join(' '.join(s) for s in split[:3])} |")
test = set(pieces["test names, HELDOUT_SYLLABLES"])
print()
for kind in ("training names, SYLLABLES", "training names, --names letters"):
    print(f"test-name pieces that occur in {kind}: {len(test & set(pieces[kind]))} of {len(test)}")
