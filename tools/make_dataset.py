#!/usr/bin/env python3
"""Synthetic long-document QA for longqa's demo model (deterministic for a seed).

Documents are many short paragraphs of facts about invented people, cities, countries and
organisations, shuffled among distractor paragraphs that reuse the same words. Questions:
  one_hop       the answer is stated in one paragraph ("Where was Ada Kelvo born?")
  two_hop       needs two paragraphs far apart ("In which country is the city where ... born?")
  yes_no        "Was Ada Kelvo born in Marlow?" (long answer: the birth paragraph)
  unanswerable  the person is absent, or a present entity's attribute is never stated
Each kind has several phrasings and each fact several sentence forms. The test split is held out
twice over: its entity names use other syllables, and half its questions use phrasings training
never sees (field "phrasing": "seen" or "heldout", for `longqa eval --group_by phrasing`). Output per split: JSONL in the gold format `longqa eval` reads
(docs/cli.md) plus "kind" and "supporting" (the paragraphs whose facts the answer needs: the long
answer, and for two-hop also the birth paragraph; longqa-train's supporting-fact loss reads it);
byte offsets index the paragraphs joined by "\\n\\n" (the API's layout).

Usage: tools/make_dataset.py --out DIR [--seed 1] [--train 2000 --dev 200 --test 200]
                             [--min_tokens 2000 --max_tokens 16000] [--kinds LIST]
                             [--min_cities 3] [--unanswerable questions|attributes|matched]
                             [--names syllables|letters] [--similar_names SHARE]
--kinds: the question kinds drawn from, a comma list in which repeating a kind weights it
(default one_hop,one_hop,two_hop,yes_no,unanswerable; e.g. two_hop alone for a two-hop stage).
--min_cities: at least this many cities a document, each with a paragraph stating its country (a
document has max(3, facts / 4)). A two-hop answer is one of those paragraphs, so a model that
only knows "the answer is a city's paragraph" is right 1 time in that many: short documents with
many cities make a two-hop drill that chance does not pass (docs/demo-model.md, session 29).
--unanswerable attributes: an unanswerable question's attribute (absent person, occupation,
founding, year established) drawn first, so that founding questions (which most people lack) are
not most of them.
--unanswerable matched: an unanswerable question's attribute drawn as a one-hop question draws
it (mostly birthplace, year and occupation), asked of a person who lacks it (or of the absent
person), so that no attribute says by itself whether a question has an answer.
--names letters: train and dev names made of letters (onsets, vowels, codas) rather than the 35
pieces of SYLLABLES, never a name the test split's syllables could make.
--similar_names SHARE: in train and dev, that share of the people in a document are named after
another one there: three of the four pieces of that person's name, in other places, and a new one
("Naplen Yohol" beside "Naphol Yowi"), so that a question's person is told from look-alikes.
Writes DIR/{train,dev,test}.jsonl and DIR/corpus.txt (text for the tokenizer).
"""
import argparse
import json
import os
import random
import re

SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "po", "an", "el", "is", "or",
             "un", "bri", "dex", "fol", "gun", "har", "jen", "kor", "lim", "mar", "nol", "pim",
             "quo", "ras", "sel", "tov", "ulm", "ver", "wes", "yar", "zin"]
# Names in the test split are built from other syllables: no test entity was seen in training.
HELDOUT_SYLLABLES = ["ba", "de", "fi", "go", "hu", "ja", "ke", "mo", "nu", "pe", "ri", "so", "tu",
                     "va", "wi", "yo", "zu", "cal", "dor", "fen", "gil", "hol", "kat", "len",
                     "mun", "nap", "per", "rod", "sib", "tam", "vin"]
OCCUPATIONS = ["painter", "engineer", "sailor", "physician", "composer", "merchant", "astronomer",
               "architect", "poet", "chemist", "farmer", "judge"]
INDUSTRIES = ["shipping", "glass", "textile", "printing", "mining", "railway", "banking", "tea"]

# Question phrasings: (seen, held out, wide). Train and dev use the seen ones; the test split asks
# half of its questions in held-out phrasings (field "phrasing"), to measure generalisation. With
# --phrasings wide, train and dev also draw from the third list: more ways to ask the same thing,
# none of them a held-out phrasing or built on its words ("home town", "job", "living", "set up",
# "started", "nation", "year of birth"), so the test still asks in phrasings never trained on.
ONE_HOP = {
    "born_city": (["Where was {p} born?", "In which city was {p} born?",
                   "What is the birthplace of {p}?", "{p} was born in which city?"],
                  ["Which town is the home town of {p}?", "where was {p} born",
                   "Name the city {p} was born in."],
                  ["Which city is the place of birth of {p}?", "Tell me where {p} was born.",
                   "birthplace of {p}", "In what city did {p} enter the world?",
                   "Where did the life of {p} begin?", "{p} is a native of which city?"]),
    "birth_year": (["In which year was {p} born?", "When was {p} born?",
                    "What year was {p} born in?"],
                   ["What is the year of birth of {p}?", "{p}'s birth year?"],
                   ["{p} was born in what year?", "Which year saw the birth of {p}?",
                    "Tell me the year {p} was born.", "year {p} was born",
                    "When did {p} enter the world?", "{p} came into the world in which year?"]),
    "occupation": (["What was the profession of {p}?", "What did {p} work as?",
                    "Which occupation did {p} have?"],
                   ["What was {p}'s job?", "how did {p} earn a living"],
                   ["What work did {p} do?", "Which trade did {p} follow?",
                    "What was the occupation of {p}?", "{p} worked in which profession?",
                    "occupation of {p}", "What line of work was {p} in?"]),
    "founded_org": (["Which company did {p} found?", "What organisation was founded by {p}?",
                     "Name the firm that {p} founded."],
                    ["Who did {p} set up as a business?", "Which business was started by {p}?"],
                    ["Which organisation did {p} create?", "What firm was established by {p}?",
                     "Tell me the company {p} founded.", "company founded by {p}",
                     "{p} was the founder of which company?",
                     "Which enterprise owes its founding to {p}?"]),
}
TWO_HOP = (["In which country is the city where {p} was born?",
            "Which country is the birthplace of {p} located in?",
            "{p} was born in a city of which country?"],
           ["What country was {p} born in?", "In what nation lies the home town of {p}?"],
           ["The city where {p} was born lies in which country?",
            "Which country contains the birthplace of {p}?",
            "In which country was the city of {p}'s birth?", "country of the birthplace of {p}",
            "Tell me the country of the city {p} was born in."])
YES_NO = (["Was {p} born in {c}?", "Is it true that {p} was born in {c}?",
           "Did {p} come into the world in {c}?"],
          ["Is {c} the birthplace of {p}?", "was {p} born in {c}"],
          ["Was the birthplace of {p} {c}?", "Tell me whether {p} was born in {c}.",
           "Was {c} the city of {p}'s birth?", "{p} was born in {c}, right?"])
ESTABLISHED = (["In which year was {o} established?", "When was {o} founded?"],
               ["How old is {o}, by its founding year?"],
               ["What year was {o} established in?", "In what year did {o} begin?"])


def name_pieces(rng, syllables, parts=2):
    return [rng.choice(syllables) for _ in range(parts)]


def word(pieces):
    """A name word (a city, a country, half a person's name) from its pieces."""
    return "".join(pieces).capitalize()


# --names letters: syllables made of letters (onset, vowel, sometimes a coda), so that training
# names are not all built from the pieces of SYLLABLES: models trained long on those null many
# questions about the test split's names (docs/demo-model.md, session 54), as if a name were known
# by its pieces.
ONSETS = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w",
          "z", "br", "ch", "dr", "gr", "sh", "st", "th", "tr", ""]
VOWELS = ["a", "e", "i", "o", "u", "a", "e", "i", "o", "u", "ai", "ea", "ou", "y"]
CODAS = ["", "", "", "", "", "", "l", "n", "r", "s", "m", "x", "nd", "rt"]


def made_of(text, syllables):
    """Whether text is a concatenation of syllables (a name the test split could hold)."""
    ends = {0}
    for i in range(len(text)):
        if i in ends:
            ends.update(i + len(s) for s in syllables if text.startswith(s, i))
    return len(text) in ends


def letters_pieces(rng, parts=2):
    while True:
        pieces = [rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS)
                  for _ in range(parts)]
        if not made_of("".join(pieces), HELDOUT_SYLLABLES):  # never a possible test-split name
            return pieces


def compose(*parts):
    """Joins strings and (key, value) pairs into a text; returns it and each key's char offset."""
    text, offsets = "", {}
    for part in parts:
        if isinstance(part, tuple):
            offsets[part[0]] = len(text)
            part = part[1]
        text += part
    return text, offsets


class World:
    """Invented entities and their facts, for one document."""

    def __init__(self, rng, syllables, people, cities, countries, orgs, similar=0.0):
        """syllables: the pieces names are made of, or None for letters_pieces'. similar: the
        share of people named after someone earlier in the document (look_alike)."""
        used = set()

        def new_pieces(parts):
            if syllables is None:
                return letters_pieces(rng, parts)
            return name_pieces(rng, syllables, parts)

        def fresh_pieces(parts):
            while True:
                pieces = new_pieces(parts)
                if word(pieces) not in used:
                    used.add(word(pieces))
                    return pieces

        def fresh(parts):
            return word(fresh_pieces(parts))

        def look_alike(pieces):
            """A person's four name pieces: three of pieces', in other places, and a new one
            ("Naplen Yohol", "Naphol Yowi"). Models answered about the wrong one of two such
            people (session 66); a quarter of a long test document's people have one such
            look-alike, a tenth of a training document's (two shared pieces are the rule)."""
            for _ in range(20):
                mine = rng.sample(pieces, 3) + new_pieces(1)
                rng.shuffle(mine)
                first, last = word(mine[:2]), word(mine[2:])
                if first not in used and last not in used and first != last:
                    used.update([first, last])
                    return mine
            return fresh_pieces(2) + fresh_pieces(2)  # its arrangements are taken: a new name
        self.countries = [fresh(3) for _ in range(countries)]
        self.cities = [{"name": fresh(2), "country": rng.choice(self.countries),
                        "population": rng.randrange(2, 900) * 1000} for _ in range(cities)]
        self.orgs = [{"name": fresh(2) + " " + rng.choice(["Works", "Company", "Guild", "Trust",
                                                            "& Sons", "Ltd."]),
                      "industry": rng.choice(INDUSTRIES),
                      "year": rng.randrange(1700, 1990) if rng.random() < 0.7 else None}
                     for _ in range(orgs)]
        self.people = []
        for _ in range(people):
            if self.people and similar > 0 and rng.random() < similar:
                pieces = look_alike(rng.choice(self.people)["pieces"])
            else:
                pieces = fresh_pieces(2) + fresh_pieces(2)
            self.people.append({
                "pieces": pieces,
                "name": word(pieces[:2]) + " " + word(pieces[2:]),
                "city": rng.choice(self.cities),
                "year": rng.randrange(1700, 2000),
                "occupation": rng.choice(OCCUPATIONS) if rng.random() < 0.8 else None,
                "org": rng.choice(self.orgs) if rng.random() < 0.5 else None,
            })
        self.absent = fresh(2) + " " + fresh(2)  # a person the document never mentions


def birth_paragraph(rng, p):
    n, first = p["name"], p["name"].split()[0]
    c, y = ("born_city", p["city"]["name"]), ("birth_year", str(p["year"]))
    parts = rng.choice([
        [n, " was born in ", c, " in ", y, "."],
        ["Born in ", c, " in ", y, ", ", n, " grew up near the harbour."],
        [n, " (born ", y, " in ", c, ") spent a quiet childhood there."],
        ["The records of ", c, " show that ", n, " was born there in ", y, "."],
    ])
    if p["occupation"]:
        parts += rng.choice([
            [" Before long ", first, " became a well known ", ("occupation", p["occupation"]), "."],
            [" Later, ", first, " worked as a ", ("occupation", p["occupation"]), " for many years."],
            [" By trade, ", first, " was a ", ("occupation", p["occupation"]), "."],
        ])
    return compose(*parts)


def fact_paragraphs(rng, world):
    """(text, answers) pairs; answers maps (fact, entity) to the answer's char offset in text."""
    out = []
    for p in world.people:
        text, offsets = birth_paragraph(rng, p)
        out.append((text, {(k, p["name"]): v for k, v in offsets.items()}))
        if p["org"]:
            o = ("founded_org", p["org"]["name"])
            text, offsets = compose(*rng.choice([
                ["In later life ", p["name"], " founded ", o, ", a ", p["org"]["industry"],
                 " business with offices in several cities."],
                [o, " was founded by ", p["name"], "; it grew into a large ", p["org"]["industry"],
                 " concern."],
            ]))
            out.append((text, {(k, p["name"]): v for k, v in offsets.items()}))
    for c in world.cities:
        k = ("country_of", c["country"])
        text, offsets = compose(*rng.choice([
            [c["name"], " is a city in ", k, " with about ", str(c["population"]),
             " inhabitants, known for its markets and its river port."],
            ["With roughly ", str(c["population"]), " residents, ", c["name"], " is one of the "
             "larger towns of ", k, "."],
            [c["name"], ", a city in ", k, ", lies on a wide river."],
        ]))
        out.append((text, {(key, c["name"]): v for key, v in offsets.items()}))
    for o in world.orgs:
        if o["year"]:
            y = ("established", str(o["year"]))
            text, offsets = compose(*rng.choice([
                [o["name"], " was established in ", y, " and trades in ", o["industry"], "."],
                ["Since its founding in ", y, ", ", o["name"], " has traded in ", o["industry"],
                 "."],
            ]))
            out.append((text, {(key, o["name"]): v for key, v in offsets.items()}))
        else:
            out.append((f"{o['name']} trades in {o['industry']} and is known across the region.",
                        {}))
    return out


def distractor(rng, world):
    """A paragraph sharing names with the facts but stating nothing that answers a question."""
    p = rng.choice(world.people)
    c = rng.choice(world.cities)
    o = rng.choice(world.orgs)
    first = p["name"].split()[0]
    templates = [
        f"Travellers from {c['name']} often spoke about the {rng.choice(OCCUPATIONS)}s of the coast.",
        f"A letter addressed to {first} was found in an archive, its date unreadable.",
        f"Many people in {c['country']} remember the winter when the river froze for weeks.",
        f"The {rng.choice(INDUSTRIES)} trade of {c['name']} grew quickly after the new bridge opened.",
        f"Stories about a {rng.choice(OCCUPATIONS)} named {p['name']} circulated for a long time; "
        f"none of them mention a birthplace.",
        f"In {rng.randrange(1700, 2000)}, a fire damaged the old market of {c['name']}.",
        f"{first} once wrote: \"I have never seen a city as busy as {c['name']}!\"",
        f"Some say {o['name']} moved its offices to {c['name']}, though nobody knows when.",
        f"Visitors to {c['country']} praise its food, its music and its long summers.",
        f"Was it {first} or a cousin who travelled to {c['name']}? The sources disagree.",
    ]
    return rng.choice(templates)


# The distractor that names an occupation beside a person (see unstate_occupation).
STORY = re.compile(rf"Stories about a ({'|'.join(OCCUPATIONS)}) named (\w+ \w+) ")


def unstate_occupation(paragraphs, question):
    """The distractor "Stories about a judge named X" states X's occupation: where the question
    asks one, such stories about its subject say whose stories they are instead, so that an
    unanswerable question stays unanswerable and a one-hop one has a single answer (session 64).
    Only these examples change, and no draw is made: every other example stays as it was."""
    def reword(m):
        occupation, name = m.groups()
        return f"Stories about {name}, told by the {occupation}s of the coast, " \
            if name in question else m[0]
    return [(STORY.sub(reword, t), a) for t, a in paragraphs]


def pick(rng, phrasings, heldout, wide):
    if heldout:
        return rng.choice(phrasings[1])
    return rng.choice(phrasings[0] + phrasings[2] if wide else phrasings[0])


KINDS = ("one_hop", "two_hop", "yes_no", "unanswerable")
DEFAULT_KINDS = "one_hop,one_hop,two_hop,yes_no,unanswerable"


def make_example(rng, example_id, target_tokens, test_split, kinds=tuple(DEFAULT_KINDS.split(",")),
                 min_cities=3, unanswerable="questions", names="syllables",
                 phrasings="seen", similar_names=0.0):
    # ~18 tokens a paragraph; facts make up about a third of the paragraphs.
    paragraphs_wanted = max(12, target_tokens // 18)
    facts_wanted = max(6, paragraphs_wanted // 3)
    syllables = HELDOUT_SYLLABLES if test_split else SYLLABLES if names == "syllables" else None
    world = World(rng, syllables, people=max(3, facts_wanted // 3),
                  cities=max(min_cities, facts_wanted // 4), countries=max(2, facts_wanted // 10),
                  orgs=max(2, facts_wanted // 6), similar=0.0 if test_split else similar_names)
    facts = fact_paragraphs(rng, world)
    paragraphs = [(t, a) for t, a in facts]
    while len(paragraphs) < paragraphs_wanted:
        paragraphs.append((distractor(rng, world), {}))
    rng.shuffle(paragraphs)
    heldout = test_split and rng.random() < 0.5
    wide = phrasings == "wide" and not test_split

    def ask(forms):  # a phrasing of one question form, as this split asks
        return pick(rng, forms, heldout, wide)

    kind = rng.choice(kinds)
    person = rng.choice(world.people)
    stated = {key for _, a in paragraphs for key in a}
    gold_key, yes_no, question, asked = None, "NONE", None, None
    if kind == "one_hop":
        asked = rng.choice([k for k in ONE_HOP if (k, person["name"]) in stated])
        question = ask(ONE_HOP[asked]).format(p=person["name"])
        gold_key = (asked, person["name"])
    elif kind == "two_hop":
        question = ask(TWO_HOP).format(p=person["name"])
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
        question = ask(YES_NO).format(p=person["name"], c=city)
        gold_key = ("born_city", person["name"])
        yes_no = "YES" if truth else "NO"
    else:
        # Unanswerable: an absent person, or a present entity whose attribute is never stated.
        choices = [(ask(ONE_HOP["born_city"]).format(p=world.absent), "absent")]
        for p in world.people:
            for attribute in ("occupation", "founded_org"):
                if (attribute, p["name"]) not in stated:
                    choices.append(
                        (ask(ONE_HOP[attribute]).format(p=p["name"]), attribute))
        for o in world.orgs:
            if o["year"] is None:
                choices.append((ask(ESTABLISHED).format(o=o["name"]), "established"))
        if unanswerable == "matched":
            # The attribute drawn as a one-hop question draws it, then asked of someone who lacks
            # it (every person has a birthplace and a year: those ask about the absent person),
            # so that no phrasing says by itself whether a question has an answer: "established"
            # is never a one-hop question, so it is never asked here either (session 65).
            attribute = rng.choice([k for k in ONE_HOP if (k, person["name"]) in stated])
            lacking = [p["name"] for p in world.people if (attribute, p["name"]) not in stated]
            subject = rng.choice(lacking) if lacking else world.absent
            choices = [(ask(ONE_HOP[attribute]).format(p=subject),
                        attribute if lacking else "absent")]
        elif unanswerable == "attributes":
            # Most people found nothing, so drawing among all questions asks mostly "which company
            # did X found" and teaches that such questions have no answer (docs/demo-model.md,
            # session 53): draw the attribute first.
            attribute = rng.choice(sorted({a for _, a in choices}))
            choices = [c for c in choices if c[1] == attribute]
        question, asked = rng.choice(choices)
    if asked == "occupation":
        paragraphs = unstate_occupation(paragraphs, question)

    texts = [t for t, _ in paragraphs]
    joined_offsets, offset = [], 0
    for t in texts:
        joined_offsets.append(offset)
        offset += len(t.encode()) + 2  # "\n\n"
    example = {"example_id": example_id, "kind": kind, "question": question, "paragraphs": texts,
               "long_answer": None, "short_answers": [], "yes_no_answer": yes_no}
    if test_split:
        example["phrasing"] = "heldout" if heldout else "seen"
    if gold_key is not None:
        index = next(i for i, (_, a) in enumerate(paragraphs) if gold_key in a)
        text, answers = paragraphs[index]
        start = joined_offsets[index]
        example["long_answer"] = {"start_byte": start, "end_byte": start + len(text.encode())}
        # The paragraphs whose facts the answer needs (ETC's HotpotQA supporting facts): the
        # long answer, and for two-hop the birth paragraph that names the city too.
        needed = {index}
        if kind == "two_hop":
            needed.add(next(i for i, (_, a) in enumerate(paragraphs)
                            if ("born_city", person["name"]) in a))
        example["supporting"] = [
            {"start_byte": joined_offsets[i],
             "end_byte": joined_offsets[i] + len(paragraphs[i][0].encode())}
            for i in sorted(needed)]
        if yes_no == "NONE":
            answer_text = {"born_city": person["city"]["name"], "birth_year": str(person["year"]),
                           "occupation": person["occupation"],
                           "founded_org": (person["org"] or {}).get("name"),
                           "country_of": person["city"]["country"]}[gold_key[0]]
            char_start = answers[gold_key]
            assert text[char_start:char_start + len(answer_text)] == answer_text
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
    parser.add_argument("--kinds", default=DEFAULT_KINDS,
                        help="question kinds drawn from; a repeated kind is drawn more often")
    parser.add_argument("--min_cities", type=int, default=3,
                        help="at least this many cities (and country paragraphs) a document")
    parser.add_argument("--unanswerable", choices=["questions", "attributes", "matched"],
                        default="questions",
                        help="draw an unanswerable question among all (mostly founding questions) "
                        "or first an attribute, then a question about it; or matched: the "
                        "attribute drawn as a one-hop question draws it, asked of someone who "
                        "lacks it")
    parser.add_argument("--names", choices=["syllables", "letters"], default="syllables",
                        help="train and dev names from SYLLABLES' 35 pieces or from letters "
                        "(the test split's names always come from HELDOUT_SYLLABLES)")
    parser.add_argument("--phrasings", choices=["seen", "wide"], default="seen",
                        help="train and dev questions in the seen phrasings, or wide: those and "
                        "as many more (never the test split's held-out ones)")
    parser.add_argument("--similar_names", type=float, default=0.0, metavar="SHARE",
                        help="in train and dev, this share of people get a name sharing three of "
                        "its four pieces with another person's in the same document")
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        parser.error(f"--kinds: unknown {', '.join(unknown)} (known: {', '.join(KINDS)})")
    if args.min_cities < 1:
        parser.error("--min_cities: at least 1")
    if not 0 <= args.similar_names <= 1:
        parser.error("--similar_names: a share from 0 to 1")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "corpus.txt"), "w") as corpus:
        for split_index, (split, count) in enumerate(
                [("train", args.train), ("dev", args.dev), ("test", args.test)]):
            # One generator per split, seeded from (seed, split): splits never share a document.
            rng = random.Random(args.seed * 1000 + split_index)
            with open(os.path.join(args.out, f"{split}.jsonl"), "w") as out:
                for i in range(count):
                    tokens = rng.randint(args.min_tokens, args.max_tokens)
                    example = make_example(rng, f"{split}-{i}", tokens, split == "test", kinds,
                                           args.min_cities, args.unanswerable, args.names,
                                           args.phrasings, args.similar_names)
                    out.write(json.dumps(example, ensure_ascii=False) + "\n")
                    if split == "train":
                        corpus.write(example["question"] + "\n")
                        corpus.write("\n".join(example["paragraphs"]) + "\n")


if __name__ == "__main__":
    main()
