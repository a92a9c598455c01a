#!/usr/bin/env python3
"""Hand-written questions about real English text (this repository's README and docs/deploy.md,
copies frozen beside this file) as a gold file that `longqa eval` scores.

questions.json: per question the document, the question, text that only its answer paragraph
holds ("long"), the short answer as it appears there ("short"; "after": text it follows), or
"yes_no", or neither (the document does not answer it); "table": true for a question a table's
cell answers (its kind in the gold file: "table"; the others' kinds are yes_no, short and
unanswerable). A paragraph is text between blank lines,
as the server splits plain text. Every answer is checked against the text: a stale one fails.
Usage: bench/real_text/make_gold.py OUT.jsonl
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def paragraphs_of(text):
    return [p.strip("\n") for p in re.split(r"\n[ \t]*\n", text) if p.strip()]


def main():
    out_path = sys.argv[1]
    questions = json.load(open(os.path.join(HERE, "questions.json")))
    with open(out_path, "w") as out:
        for i, q in enumerate(questions):
            paragraphs = paragraphs_of(open(os.path.join(HERE, q["doc"]), encoding="utf-8").read())
            example = {"example_id": f"real-{i}", "question": q["question"],
                       "paragraphs": paragraphs, "long_answer": None, "short_answers": [],
                       "yes_no_answer": q.get("yes_no", "NONE"),
                       "kind": "table" if q.get("table") else "yes_no" if "yes_no" in q
                       else "short" if "short" in q else "unanswerable"}
            if "long" in q:
                hits = [n for n, p in enumerate(paragraphs) if q["long"] in p]
                if len(hits) != 1:
                    sys.exit(f"{q['question']}: {len(hits)} paragraphs hold {q['long']!r}")
                n = hits[0]
                start = sum(len(p.encode()) + 2 for p in paragraphs[:n])
                paragraph = paragraphs[n]
                example["long_answer"] = {"start_byte": start,
                                          "end_byte": start + len(paragraph.encode())}
                if "short" in q:
                    from_ = paragraph.find(q.get("after", "")) + len(q.get("after", ""))
                    m = re.compile(rf"(?<!\w){re.escape(q['short'])}(?!\w)").search(paragraph,
                                                                                     from_)
                    if not m:
                        sys.exit(f"{q['question']}: {q['short']!r} is not in its paragraph")
                    s = start + len(paragraph[:m.start()].encode())
                    example["short_answers"] = [
                        {"start_byte": s, "end_byte": s + len(q["short"].encode())}]
            out.write(json.dumps(example) + "\n")
    print(f"{len(questions)} questions -> {out_path}")


if __name__ == "__main__":
    main()
