#!/usr/bin/env python3
"""Synthetic long-document QA for longqa's demo model (deterministic for a seed).

Documents are many short paragraphs of facts about invented people, cities, countries and
organisations, shuffled among distractor paragraphs that reuse the same words. Questions:
  one_hop       the answer is stated in one paragraph ("Where was Ada Kelvo born?")
  two_hop       needs two paragraphs far apart ("In which country is the city where ... born?")
  yes_no        "Was Ada Kelvo born in Marlow?" (long answer: the birth paragraph)
  unanswerable  the person is absent, or the attribute is never stated
Each kind has several phrasings. Output per split: JSONL in the gold format `longqa eval` reads
(docs/cli.md) plus "kind"; byte offsets index the paragraphs joined by "\\n\\n" (the API's layout).

Usage: tools/make_dataset.py --out DIR [--seed 1] [--train 2000 --dev 200 --test 200]
                             [--min_tokens 2000 --max_tokens 16000]
Writes DIR/{train,dev,test}.jsonl and DIR/corpus.txt (text for the tokenizer).
"""
import argparse
import json
import os
import random

SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "po", "an", "el", "is", "or",
             "un", "bri", "dex", "fol", "gun", "har", "jen", "kor", "lim", "mar", "nol", "pim",
             "quo", "ras", "sel", "tov", "ulm", "ver", "wes", "yar", "zin"]
OCCUPATIONS = ["painter", "engineer", "sailor", "physician", "composer", "merchant", "astronomer",
               "architect", "poet", "chemist", "farmer", "judge"]
INDUSTRIES = ["shipping", "glass", "textile", "printing", "mining", "railway", "banking", "tea"]

ONE_HOP = {
    "born_city": ["Where was {p} born?", "In which city was {p} born?",
                  "What is the birthplace of {p}?", "{p} was born in which city?"],
    "birth_year": ["In which year was {p} born?", "When was {p} born?",
                   "What year was {p} born in?"],
    "occupation": ["What was the profession of {p}?", "What did {p} work as?",
                   "Which occupation did {p} have?"],
    "founded_org": ["Which company did {p} found?", "What organisation was founded by {p}?",
                    "Name the firm that {p} founded."],
}
TWO_HOP = ["In which country is the city where {p} was born?",
           "Which country is the birthplace of {p} located in?",
           "{p} was born in a city of which country?"]
YES_NO = ["Was {p} born in {c}?", "Is it true that {p} was born in {c}?",
          "Did {p} come into the world in {c}?"]


def name(rng, parts=2):
    return "".join(rng.choice(SYLLABLES) for _ in range(parts)).capitalize()


class World:
    """Invented entities and their facts, for one document."""

    def __init__(self, rng, people, cities, countries, orgs):
        used = set()

        def fresh(parts):
            while True:
                n = name(rng, parts)
                if n not in used:
                    used.add(n)
                    return n
        self.countries = [fresh(3) for _ in range(countries)]
        self.cities = [{"name": fresh(2), "country": rng.choice(self.countries),
                        "population": rng.randrange(2, 900) * 1000} for _ in range(cities)]
        self.orgs = [{"name": fresh(2) + " " + rng.choice(["Works", "Company", "Guild", "Trust"]),
                      "industry": rng.choice(INDUSTRIES),
                      "year": rng.randrange(1700, 1990) if rng.random() < 0.7 else None}
                     for _ in range(orgs)]
        self.people = []
        for _ in range(people):
            self.people.append({
                "name": fresh(2) + " " + fresh(2),
                "city": rng.choice(self.cities),
                "year": rng.randrange(1700, 2000),
                "occupation": rng.choice(OCCUPATIONS) if rng.random() < 0.8 else None,
                "org": rng.choice(self.orgs) if rng.random() < 0.5 else None,
            })
        self.absent = fresh(2) + " " + fresh(2)  # a person the document never mentions


def fact_paragraphs(rng, world):
    """(text, answers) pairs; answers maps a fact key to the answer substring's offset in text."""
    out = []
    for p in world.people:
        text = f"{p['name']} was born in {p['city']['name']} in {p['year']}."
        answers = {("born_city", p["name"]): text.index(p["city"]["name"]),
                   ("birth_year", p["name"]): text.index(str(p["year"]))}
        if p["occupation"]:
            extra = f" Before long {p['name'].split()[0]} became a well known {p['occupation']}."
            answers[("occupation", p["name"])] = len(text) + extra.index(p["occupation"])
            text += extra
        out.append((text, answers))
        if p["org"]:
            t = (f"In later life {p['name']} founded {p['org']['name']}, a {p['org']['industry']} "
                 f"business with offices in several cities.")
            out.append((t, {("founded_org", p["name"]): t.index(p["org"]["name"])}))
    for c in world.cities:
        t = (f"{c['name']} is a city in {c['country']} with about {c['population']} inhabitants, "
             f"known for its markets and its river port.")
        out.append((t, {("country_of", c["name"]): t.index(c["country"])}))
    for o in world.orgs:
        if o["year"]:
            t = f"{o['name']} was established in {o['year']} and trades in {o['industry']}."
        else:
            t = f"{o['name']} trades in {o['industry']} and is known across the region."
        out.append((t, {}))
    return out


def distractor(rng, world):
    """A paragraph sharing names with the facts but stating nothing that answers a question."""
    p = rng.choice(world.people)
    c = rng.choice(world.cities)
    templates = [
        f"Travellers from {c['name']} often spoke about the {rng.choice(OCCUPATIONS)}s of the coast.",
        f"A letter addressed to {p['name'].split()[0]} was found in an archive, its date unreadable.",
        f"Many people in {c['country']} remember the winter when the river froze for weeks.",
        f"The {rng.choice(INDUSTRIES)} trade of {c['name']} grew quickly after the new bridge opened.",
        f"Stories about a {rng.choice(OCCUPATIONS)} named {name(rng)} circulated for a long time.",
    ]
    return rng.choice(templates)


def make_example(rng, example_id, target_tokens):
    # ~18 tokens a paragraph; facts make up about a third of the paragraphs.
    paragraphs_wanted = max(12, target_tokens // 18)
    facts_wanted = max(6, paragraphs_wanted // 3)
    world = World(rng, people=max(3, facts_wanted // 3), cities=max(3, facts_wanted // 4),
                  countries=max(2, facts_wanted // 10), orgs=max(2, facts_wanted // 6))
    facts = fact_paragraphs(rng, world)
    paragraphs = [(t, a) for t, a in facts]
    while len(paragraphs) < paragraphs_wanted:
        paragraphs.append((distractor(rng, world), {}))
    rng.shuffle(paragraphs)

    kind = rng.choice(["one_hop", "one_hop", "two_hop", "yes_no", "unanswerable"])
    person = rng.choice(world.people)
    gold_key, yes_no, question = None, "NONE", None
    if kind == "one_hop":
        attribute = rng.choice([k for k in ONE_HOP if (k, person["name"]) in
                                {key for _, a in paragraphs for key in a}])
        question = rng.choice(ONE_HOP[attribute]).format(p=person["name"])
        gold_key = (attribute, person["name"])
    elif kind == "two_hop":
        question = rng.choice(TWO_HOP).format(p=person["name"])
        gold_key = ("country_of", person["city"]["name"])
        # Two hops far apart: move the birth paragraph to the other end of the document.
        birth = next(i for i, (_, a) in enumerate(paragraphs) if ("born_city", person["name"]) in a)
        country = next(i for i, (_, a) in enumerate(paragraphs) if gold_key in a)
        target = 0 if country > len(paragraphs) // 2 else len(paragraphs) - 1
        if target != country:
            paragraphs.insert(target, paragraphs.pop(birth))
    elif kind == "yes_no":
        truth = rng.random() < 0.5
        city = person["city"]["name"] if truth else rng.choice(
            [c["name"] for c in world.cities if c["name"] != person["city"]["name"]])
        question = rng.choice(YES_NO).format(p=person["name"], c=city)
        gold_key = ("born_city", person["name"])
        yes_no = "YES" if truth else "NO"
    else:
        unstated = [o for o in world.orgs if o["year"] is None]
        if unstated and rng.random() < 0.5:
            question = f"In which year was {unstated[0]['name']} established?"
        else:
            question = rng.choice(ONE_HOP["born_city"]).format(p=world.absent)

    texts = [t for t, _ in paragraphs]
    joined_offsets, offset = [], 0
    for t in texts:
        joined_offsets.append(offset)
        offset += len(t.encode()) + 2  # "\n\n"
    example = {"example_id": example_id, "kind": kind, "question": question, "paragraphs": texts,
               "long_answer": None, "short_answers": [], "yes_no_answer": yes_no}
    if gold_key is not None:
        index = next(i for i, (_, a) in enumerate(paragraphs) if gold_key in a)
        text, answers = paragraphs[index]
        start = joined_offsets[index]
        example["long_answer"] = {"start_byte": start, "end_byte": start + len(text.encode())}
        if yes_no == "NONE":
            answer_text = {"born_city": person["city"]["name"], "birth_year": str(person["year"]),
                           "occupation": person["occupation"],
                           "founded_org": (person["org"] or {}).get("name"),
                           "country_of": person["city"]["country"]}[gold_key[0]]
            char_start = answers[gold_key]
            byte_start = start + len(text[:char_start].encode())
            example["short_answers"] = [{"start_byte": byte_start,
                                         "end_byte": byte_start + len(answer_text.encode())}]
    return example


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--train", type=int, default=2000)
    parser.add_argument("--dev", type=int, default=200)
    parser.add_argument("--test", type=int, default=200)
    parser.add_argument("--min_tokens", type=int, default=2000)
    parser.add_argument("--max_tokens", type=int, default=16000)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "corpus.txt"), "w") as corpus:
        for split_index, (split, count) in enumerate(
                [("train", args.train), ("dev", args.dev), ("test", args.test)]):
            # One generator per split, seeded from (seed, split): splits never share a document.
            rng = random.Random(args.seed * 1000 + split_index)
            with open(os.path.join(args.out, f"{split}.jsonl"), "w") as out:
                for i in range(count):
                    tokens = rng.randint(args.min_tokens, args.max_tokens)
                    example = make_example(rng, f"{split}-{i}", tokens)
                    out.write(json.dumps(example, ensure_ascii=False) + "\n")
                    if split == "train":
                        corpus.write(example["question"] + "\n")
                        corpus.write("\n".join(example["paragraphs"]) + "\n")


if __name__ == "__main__":
    main()
