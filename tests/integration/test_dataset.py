"""tools/make_dataset.py: deterministic for a seed, splits disjoint, every gold span correct."""
import importlib.util
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "make_dataset.py")


def generate(out, seed, *flags):
    subprocess.run([sys.executable, TOOL, "--out", str(out), "--seed", str(seed), "--train", "30",
                    "--dev", "10", "--test", "10", "--min_tokens", "500", "--max_tokens", "3000",
                    *flags], check=True)
    return {split: [json.loads(l) for l in open(out / f"{split}.jsonl")]
            for split in ("train", "dev", "test")}


def load_tool():
    spec = importlib.util.spec_from_file_location("make_dataset", TOOL)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


def template_pattern(template):
    """A question template ("Where was {p} born?") as a regular expression for its questions."""
    return re.compile(re.escape(template).replace(r"\{p\}", "(.+)").replace(r"\{o\}", "(.+)")
                      .replace(r"\{c\}", "(.+)") + "$")


def test_deterministic_and_seed_dependent(tmp_path):
    a = generate(tmp_path / "a", 1)
    b = generate(tmp_path / "b", 1)
    c = generate(tmp_path / "c", 2)
    assert a == b
    assert a["dev"] != c["dev"]
    assert (tmp_path / "a" / "corpus.txt").read_text() == (tmp_path / "b" / "corpus.txt").read_text()


def test_gold_spans_point_at_the_answer(tmp_path):
    data = generate(tmp_path / "d", 3)
    kinds = set()
    for split, examples in data.items():
        for e in examples:
            kinds.add(e["kind"])
            text = "\n\n".join(e["paragraphs"]).encode()
            assert all("\n\n" not in p for p in e["paragraphs"])
            if e["kind"] == "unanswerable":
                assert e["long_answer"] is None and e["short_answers"] == []
                continue
            la = e["long_answer"]
            paragraph = text[la["start_byte"]:la["end_byte"]].decode()
            assert paragraph in e["paragraphs"], e["example_id"]
            if e["kind"] == "yes_no":
                assert e["yes_no_answer"] in ("YES", "NO") and e["short_answers"] == []
                continue
            (sa,) = e["short_answers"]
            assert la["start_byte"] <= sa["start_byte"] < sa["end_byte"] <= la["end_byte"]
            answer = text[sa["start_byte"]:sa["end_byte"]].decode()
            assert answer and answer.strip() == answer
            if e["kind"] == "two_hop":
                assert " city in " in paragraph or " towns of " in paragraph
    assert kinds == {"one_hop", "two_hop", "yes_no", "unanswerable"}
    ids = [e["example_id"] for examples in data.values() for e in examples]
    assert len(ids) == len(set(ids))
    train_docs = {tuple(e["paragraphs"]) for e in data["train"]}
    assert not any(tuple(e["paragraphs"]) in train_docs for e in data["test"])


def test_test_split_is_held_out(tmp_path):
    """Test entities never appear in training, and held-out phrasings are never trained on."""
    data = generate(tmp_path / "h", 4)
    train_text = " ".join(" ".join(e["paragraphs"]) + " " + e["question"] for e in data["train"])
    train_questions = {e["question"] for e in data["train"] + data["dev"]}
    phrasings = set()
    for e in data["test"]:
        phrasings.add(e["phrasing"])
        for word in e["question"].replace("?", " ").replace("'s", " ").split():
            if word[0].isupper() and word not in ("Which", "What", "Where", "When", "In", "Is",
                                                  "Was", "Did", "Name", "How", "Who"):
                assert word not in train_text, (word, e["question"])
    assert phrasings == {"seen", "heldout"}
    # A held-out phrasing's fixed words never start a training question.
    heldout_openings = {"Which town", "What is the year", "Who did", "How old", "In what nation"}
    assert not any(q.startswith(o) for q in train_questions for o in heldout_openings)


def test_phrasings_wide_adds_training_phrasings_and_keeps_the_test_split(tmp_path):
    """--phrasings wide: train and dev also ask in the third list's phrasings, never in a held-out
    one, and the test split is the one the default makes."""
    tool = load_tool()
    forms = [tool.TWO_HOP, tool.YES_NO, tool.ESTABLISHED, *tool.ONE_HOP.values()]

    def which_list(question):  # 0 seen, 1 held out, 2 wide: the list whose template matches
        return {i for f in forms for i, ts in enumerate(f) for t in ts
                if template_pattern(t).match(question)}
    default = generate(tmp_path / "s", 9)
    wide = generate(tmp_path / "w", 9, "--phrasings", "wide")
    assert wide["test"] == default["test"]
    lists = [which_list(e["question"]) for e in wide["train"] + wide["dev"]]
    assert all(found and 1 not in found for found in lists), lists
    assert sum(2 in found for found in lists) >= 10  # about half of 40 questions
    assert all(which_list(e["question"]) == {0} for e in default["train"] + default["dev"])
    # The wide phrasings avoid the held-out phrasings' telling words.
    for f in forms:
        for template in f[2]:
            assert not re.search(r"home town|job|living|set up|started|nation|year of birth",
                                 template), template


def test_kinds_restricts_and_weights_the_questions(tmp_path):
    def kinds_of(out, kinds):
        subprocess.run([sys.executable, TOOL, "--out", str(out), "--seed", "4", "--train", "40",
                        "--dev", "0", "--test", "0", "--min_tokens", "400", "--max_tokens", "900",
                        "--kinds", kinds], check=True)
        return [json.loads(l)["kind"] for l in open(out / "train.jsonl")]
    assert set(kinds_of(tmp_path / "a", "two_hop")) == {"two_hop"}
    mixed = kinds_of(tmp_path / "b", "two_hop,two_hop,two_hop,one_hop")
    assert set(mixed) == {"two_hop", "one_hop"} and mixed.count("two_hop") > mixed.count("one_hop")
    bad = subprocess.run([sys.executable, TOOL, "--out", str(tmp_path / "c"), "--kinds", "three_hop"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown three_hop" in bad.stderr


def test_min_cities_puts_many_country_paragraphs_in_short_documents(tmp_path):
    def city_paragraph_counts(out, *flags):
        subprocess.run([sys.executable, TOOL, "--out", str(out), "--seed", "5", "--train", "20",
                        "--dev", "0", "--test", "0", "--min_tokens", "220", "--max_tokens", "600",
                        "--kinds", "two_hop", *flags], check=True)
        counts = []
        for line in open(out / "train.jsonl"):
            e = json.loads(line)
            city = [p for p in e["paragraphs"] if " city in " in p or " towns of " in p]
            la = e["long_answer"]
            gold = "\n\n".join(e["paragraphs"]).encode()[la["start_byte"]:la["end_byte"]].decode()
            assert gold in city  # the answer is still one of them
            counts.append(len(city))
        return counts
    assert set(city_paragraph_counts(tmp_path / "a")) == {3}  # the default: chance 1 in 3
    assert min(city_paragraph_counts(tmp_path / "b", "--min_cities", "12")) >= 12
    bad = subprocess.run([sys.executable, TOOL, "--out", str(tmp_path / "c"), "--min_cities", "0"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--min_cities" in bad.stderr


def test_unanswerable_attributes_draws_the_attribute_first(tmp_path):
    # Templates of each unanswerable attribute, as regular expressions over the seen phrasings.
    tool = load_tool()
    patterns = {name: [template_pattern(t) for t in templates[0]]
                for name, templates in [("absent", tool.ONE_HOP["born_city"]),
                                        ("occupation", tool.ONE_HOP["occupation"]),
                                        ("founded_org", tool.ONE_HOP["founded_org"]),
                                        ("established", tool.ESTABLISHED)]}

    def attributes(out, *flags):
        subprocess.run([sys.executable, TOOL, "--out", str(out), "--seed", "6", "--train", "120",
                        "--dev", "0", "--test", "0", "--min_tokens", "2000", "--max_tokens", "6000",
                        "--kinds", "unanswerable", *flags], check=True)
        counts = dict.fromkeys(patterns, 0)
        for line in open(out / "train.jsonl"):
            e = json.loads(line)
            assert e["long_answer"] is None and e["short_answers"] == []
            names = [n for n, ps in patterns.items() if any(p.match(e["question"]) for p in ps)]
            assert len(names) == 1, e["question"]
            counts[names[0]] += 1
        return counts
    default = attributes(tmp_path / "a")
    assert default == attributes(tmp_path / "b", "--unanswerable", "questions")
    assert default["founded_org"] > 0.5 * sum(default.values())  # why the flag exists
    balanced = attributes(tmp_path / "c", "--unanswerable", "attributes")
    assert all(n >= 0.15 * sum(balanced.values()) for n in balanced.values()), balanced


def test_unanswerable_matched_asks_what_one_hop_asks(tmp_path):
    """--unanswerable matched: unanswerable questions ask each attribute as often as one-hop ones
    do, of a person who lacks it (a birthplace or year: of a person the document never names)."""
    tool = load_tool()
    asks = {attribute: [template_pattern(t) for phrasings in templates for t in phrasings]
            for attribute, templates in tool.ONE_HOP.items()}
    out = tmp_path / "m"
    subprocess.run([sys.executable, TOOL, "--out", str(out), "--seed", "6", "--train", "300",
                    "--dev", "0", "--test", "0", "--min_tokens", "1500", "--max_tokens", "4000",
                    "--kinds", "one_hop,unanswerable", "--unanswerable", "matched"], check=True)
    counts = {"one_hop": dict.fromkeys(asks, 0), "unanswerable": dict.fromkeys(asks, 0)}
    for e in map(json.loads, open(out / "train.jsonl")):
        (attribute, name), = [(a, m.group(1)) for a, ps in asks.items() for m in
                              (p.match(e["question"]) for p in ps) if m]
        counts[e["kind"]][attribute] += 1
        if e["kind"] != "unanswerable":
            continue
        text = "\n\n".join(e["paragraphs"])
        if attribute in ("born_city", "birth_year"):
            assert name not in text, e["question"]
        elif attribute == "founded_org":
            assert not re.search(rf"{name} founded|founded by {name}", text), e["question"]
    shares = {kind: {a: n / sum(c.values()) for a, n in c.items()} for kind, c in counts.items()}
    for attribute in asks:  # ~150 questions a kind: a share within 0.1 of one-hop's
        assert abs(shares["unanswerable"][attribute] - shares["one_hop"][attribute]) < 0.1, shares
    assert shares["unanswerable"]["founded_org"] < 0.25, shares  # the default: more than half


def test_names_letters_widens_training_names_and_keeps_the_test_split(tmp_path):
    tool = load_tool()

    def person_names(examples):  # the capitalised words of the questions but their first
        words = {w for e in examples for w in re.findall(r"\b[A-Z][a-z]+\b", e["question"][1:])}
        return words - {"Works", "Company", "Guild", "Trust", "Sons", "Ltd"}  # organisations
    default = generate(tmp_path / "s", 8)
    letters = generate(tmp_path / "l", 8, "--names", "letters")
    assert letters["test"] == default["test"]  # the test split is the same held-out set
    syllable_names = person_names(default["train"] + default["dev"])
    letter_names = person_names(letters["train"] + letters["dev"])
    assert syllable_names and all(tool.made_of(n.lower(), tool.SYLLABLES) for n in syllable_names)
    built = [n for n in letter_names if tool.made_of(n.lower(), tool.SYLLABLES)]
    assert len(built) < 0.2 * len(letter_names), built
    # No training or dev name is one the test split's syllables could make.
    assert not any(tool.made_of(n.lower(), tool.HELDOUT_SYLLABLES) for n in letter_names)
    assert not person_names(letters["test"]) & letter_names


def test_similar_names_puts_look_alike_people_in_training_documents(tmp_path):
    """--similar_names: people named with three pieces of another person's name in the
    same document; every name stays unique, the gold spans stay right (make_example asserts
    them) and the test split is the one the default makes."""
    import random
    tool = load_tool()

    def look_alikes(world):  # people sharing three name pieces or more with an earlier one
        count = 0
        for i, p in enumerate(world.people):
            for q in world.people[:i]:
                shared = sum(min(p["pieces"].count(x), q["pieces"].count(x))
                             for x in set(p["pieces"]))
                if shared >= 3:  # (4: the new piece is the one left out)
                    count += 1
                    break
        return count
    for names in (tool.SYLLABLES, None):  # syllable names and --names letters
        plain = tool.World(random.Random(3), names, 40, 10, 3, 5)
        drilled = tool.World(random.Random(3), names, 40, 10, 3, 5, similar=0.5)
        # About half of 39 (a name whose look-alikes used every free combination is drawn anew);
        # 0-3 by chance.
        assert look_alikes(drilled) >= 15 > 5 >= look_alikes(plain)
        words = [w for p in drilled.people for w in p["name"].split()]
        assert len(words) == len(set(words))  # first and last names unique in the document
        assert all(p["name"] == " ".join("".join(half).capitalize() for half in
                                         (p["pieces"][:2], p["pieces"][2:])) for p in drilled.people)
    default = generate(tmp_path / "d", 6)
    similar = generate(tmp_path / "s", 6, "--similar_names", "0.5")
    assert similar["test"] == default["test"]
    assert similar["train"] != default["train"]
    bad = subprocess.run([sys.executable, TOOL, "--out", str(tmp_path / "b"), "--similar_names",
                          "2"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--similar_names: a share from 0 to 1" in bad.stderr


def test_no_paragraph_but_the_gold_one_states_an_occupation(tmp_path):
    """An unanswerable occupation question has no occupation stated for its person anywhere, and a
    one-hop one only in its gold paragraph (a distractor once said "a judge named X")."""
    out = tmp_path / "o"
    subprocess.run([sys.executable, TOOL, "--out", str(out), "--seed", "5", "--train", "150",
                    "--dev", "0", "--test", "150", "--min_tokens", "1500", "--max_tokens", "3000",
                    "--kinds", "one_hop,unanswerable", "--unanswerable", "attributes"], check=True)
    tool = load_tool()
    occupation = "|".join(tool.OCCUPATIONS)
    asks = [template_pattern(t) for phrasings in tool.ONE_HOP["occupation"] for t in phrasings]
    checked = {"one_hop": 0, "unanswerable": 0}
    for split in ("train", "test"):
        for e in map(json.loads, open(out / f"{split}.jsonl")):
            name = next((m.group(1) for m in (a.match(e["question"]) for a in asks) if m), None)
            if name is None:
                continue
            stating = [p for p in e["paragraphs"] if name in p and re.search(
                rf"(\ba|\ban|known) ({occupation})\b|({occupation}) named {name}", p)]
            if e["kind"] == "unanswerable":
                assert stating == [], (e["example_id"], e["question"], stating)
            else:
                la = e["long_answer"]
                gold = "\n\n".join(e["paragraphs"]).encode()[la["start_byte"]:la["end_byte"]]
                assert stating == [gold.decode()], (e["example_id"], e["question"], stating)
            checked[e["kind"]] += 1
    assert checked["one_hop"] >= 20 and checked["unanswerable"] >= 10, checked


def test_supporting_paragraphs_are_the_facts_the_answer_needs(tmp_path):
    data = generate(tmp_path / "s", 4, "--kinds", "one_hop,two_hop,yes_no,unanswerable")
    seen = set()
    for e in data["train"] + data["dev"] + data["test"]:
        text = "\n\n".join(e["paragraphs"]).encode()
        if e["kind"] == "unanswerable":
            assert "supporting" not in e
            continue
        spans = [(s["start_byte"], s["end_byte"]) for s in e["supporting"]]
        assert spans == sorted(set(spans))
        read = [text[b:end].decode() for b, end in spans]
        assert all(p in e["paragraphs"] for p in read), e["example_id"]
        la = e["long_answer"]
        assert (la["start_byte"], la["end_byte"]) in spans  # the long answer is one of them
        if e["kind"] != "two_hop":
            assert len(spans) == 1
            continue
        # Two-hop: also the paragraph that says where the person was born, naming the city
        # whose country paragraph is the long answer.
        assert len(spans) == 2
        answer = text[la["start_byte"]:la["end_byte"]].decode()
        (birth,) = [p for p in read if p != answer]
        assert "born" in birth.lower(), birth
        assert any(name in birth for name in re.findall(r"[A-Z]\w+ [A-Z]\w+", e["question"])), e
        # The city named there is the one whose paragraph answers.
        assert set(re.findall(r"[A-Z]\w+", birth)) & set(re.findall(r"[A-Z]\w+", answer)), e
        seen.add(e["kind"])
    assert seen == {"two_hop"}
