#!/usr/bin/env bash
# Session 75: why the kept ETC models answer three unanswerable occupation questions of the test
# split (test-42, test-118, test-132: the person's birth paragraph is there, no occupation). Each
# document is served whole and cut down (the person's paragraphs only; 80 paragraphs around the
# first of them; each half; without every "Stories about ..." paragraph; without the person's
# founding paragraph), by MODEL as shipped (etc.max_segments 256: over 256 paragraphs, several
# paragraphs share one segment token) and by a copy with etc.max_segments 2048 (one segment token
# a paragraph in every test document: they have 459-1,775 paragraphs). Writes segment-ablation.md
# beside itself: the long answer picked, or NULL.
# Usage: MODEL=build/matched/ship-etc-minilm-contrast600 segment-ablation.sh   (env W: the work
# folder, default build/matched; THREADS)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/../../../.."
W="${W:-build/matched}" MODEL="${MODEL:-build/matched/ship-etc-minilm-contrast600}"
out=$W/segment-ablation
rm -rf "$out" && mkdir -p "$out"
python3 - "$W/data/long/test.jsonl" "$out/rows.jsonl" <<'EOF'
import json, sys
rows = {r["example_id"]: r for r in map(json.loads, open(sys.argv[1]))}
with open(sys.argv[2], "w") as out:
    for id_, first, last in [("test-42", "Napvin", "Fivin"), ("test-118", "Holso", "Kesib"),
                             ("test-132", "Calfi", "Rihol")]:
        row, paragraphs = rows[id_], rows[id_]["paragraphs"]
        mentions = [i for i, p in enumerate(paragraphs) if first in p or last in p]
        half = len(paragraphs) // 2
        variants = {
            "whole": paragraphs,
            "person's paragraphs only": [paragraphs[i] for i in mentions],
            "80 paragraphs around the first mention":
                paragraphs[max(0, mentions[0] - 40):mentions[0] + 40],
            "first half": paragraphs[:half], "second half": paragraphs[half:],
            'without every "Stories about"': [p for p in paragraphs
                                              if not p.startswith("Stories about")],
            "without the person's founding": [p for p in paragraphs
                                              if f"founded by {first}" not in p],
        }
        for name, kept in variants.items():
            variant = dict(row, example_id=f"{id_}: {name}", paragraphs=kept)
            out.write(json.dumps(variant) + "\n")
EOF
cp -r "$MODEL" "$out/seg256"
cp -r "$MODEL" "$out/seg2048"
python3 - "$out" <<'EOF'
import json, sys
for folder, segments in (("seg256", 256), ("seg2048", 2048)):
    path = f"{sys.argv[1]}/{folder}/config.json"
    config = json.load(open(path))
    config["etc"]["max_segments"] = segments
    json.dump(config, open(path, "w"), indent=2)
EOF
tools/eval_demo.sh "$out/rows.jsonl" "$out/eval" "$out/seg256" "$out/seg2048" > "$out/eval.log" 2>&1
python3 - "$out" "$MODEL" > "$HERE/segment-ablation.md" <<'EOF'
import json, sys
out, model = sys.argv[1], sys.argv[2]
rows = {r["example_id"]: r for r in map(json.loads, open(f"{out}/rows.jsonl"))}
def picked(folder):
    predictions = json.load(open(f"{out}/eval/{folder}.predictions.json"))["predictions"]
    result = {}
    for p in predictions:
        text = "\n\n".join(rows[p["example_id"]]["paragraphs"]).encode()
        long = p["long_answer"]
        result[p["example_id"]] = ("NULL" if long["start_byte"] < 0 else
                                   text[long["start_byte"]:long["end_byte"]].decode()[:70])
    return result
a, b = picked("seg256"), picked("seg2048")
print(f"{model} at its own null threshold; the long answer picked (NULL: no answer).\n")
print("| document | paragraphs | question | max_segments 256 | max_segments 2048 |")
print("| --- | --- | --- | --- | --- |")
for id_, row in rows.items():
    print(f"| {id_} | {len(row['paragraphs'])} | {row['question']} | {a[id_]} | {b[id_]} |")
EOF
cat "$HERE/segment-ablation.md"
