"""The C++ tokenizer.json reader (model/tokenizers/hf) against the Python `tokenizers` package:
the same ids AND the same byte offsets on 10,000 lines of hard mixed text (mixed_text.py) for
all-MiniLM-L6-v2's own tokenizer.json, for WordPiece tokenizers trained here with other
normalizer settings (cased; accents kept; no CJK splitting), a RoBERTa-style byte-level BPE
(prefix space, offsets trimmed by its post-processor) and sentencepiece-style Unigram models
(Metaspace, prepend always / first; XLM-R's Precompiled normalizer, alone and followed by the
Strip and Replace that transformers' converter adds), all trained here on generated text (no
download). Reported: mismatches = 0."""
import json
import os
import subprocess

import pytest
from tokenizers import (Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers,
                        processors, trainers)

from mixed_text import mixed_lines

SOURCE = os.environ.get("LONGQA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("LONGQA_BUILD_DIR", os.path.join(SOURCE, "build"))
TOKENIZE = os.path.join(BUILD, "tools", "longqa-tokenize")
RANDOM_MODEL = os.path.join(BUILD, "tools", "longqa-random-model")
MINILM = os.path.join(SOURCE, "third_party", "minilm", "tokenizer.json")
LINES = 10000


@pytest.fixture(scope="module")
def lines_file(tmp_path_factory):
    lines = mixed_lines(LINES)
    path = tmp_path_factory.mktemp("text") / "lines.jsonl"
    with open(path, "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    return lines, str(path)


def byte_offsets(text):
    """Character index -> byte offset (the Python binding reports character offsets)."""
    offsets = [0]
    for ch in text:
        offsets.append(offsets[-1] + len(ch.encode("utf-8")))
    return offsets


def mismatches(tokenizer_path, lines_file):
    lines, path = lines_file
    reference = Tokenizer.from_file(tokenizer_path)
    reference.no_truncation()
    reference.no_padding()
    got = subprocess.run([TOKENIZE, f"--tokenizer={tokenizer_path}", f"--input={path}"],
                         check=True, capture_output=True, text=True).stdout.split("\n")
    bad = []
    for i, line in enumerate(lines):
        encoding = reference.encode(line, add_special_tokens=False)
        to_bytes = byte_offsets(line)
        want = " ".join(f"{id_}:{to_bytes[b]}:{to_bytes[e]}"
                        for id_, (b, e) in zip(encoding.ids, encoding.offsets))
        if got[i] != want:
            bad.append((line, got[i], want))
    print(f"{os.path.basename(os.path.dirname(tokenizer_path))}/{os.path.basename(tokenizer_path)}:"
          f" {len(bad)} mismatches of {len(lines)} lines")
    for line, g, w in bad[:3]:
        print(repr(line), "\n  longqa:", g[:400], "\n  tokenizers:", w[:400])
    return len(bad)


def test_minilm_wordpiece(lines_file):
    assert mismatches(MINILM, lines_file) == 0


@pytest.mark.parametrize("lowercase,strip_accents,chinese", [
    (False, None, True),    # cased BERT: accents kept (strip_accents follows lowercase)
    (True, False, True),    # uncased, accents kept
    (False, True, False),   # cased, accents stripped, CJK not split
])
def test_trained_wordpiece(lines_file, tmp_path, lowercase, strip_accents, chinese):
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=40))
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=chinese, strip_accents=strip_accents,
        lowercase=lowercase)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=3000,
                                        special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"])
    tokenizer.train_from_iterator(lines_file[0][:3000], trainer=trainer)
    path = str(tmp_path / "tokenizer.json")
    tokenizer.save(path)
    assert mismatches(path, lines_file) == 0


def test_trained_byte_level_bpe(lines_file, tmp_path):
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tokenizer.post_processor = processors.RobertaProcessing(
        ("</s>", 2), ("<s>", 0), trim_offsets=True, add_prefix_space=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=4000,
                                  special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(mixed_lines(3000, seed=7), trainer=trainer)
    path = str(tmp_path / "tokenizer.json")
    tokenizer.save(path)
    assert mismatches(path, lines_file) == 0


@pytest.mark.parametrize("prepend_scheme,lowercase", [("always", False), ("first", True)])
def test_trained_unigram(lines_file, tmp_path, prepend_scheme, lowercase):
    tokenizer = Tokenizer(models.Unigram())
    if lowercase:
        tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme=prepend_scheme)
    trainer = trainers.UnigramTrainer(vocab_size=8000, unk_token="<unk>",
                                      special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tokenizer.train_from_iterator(mixed_lines(3000, seed=9), trainer=trainer)
    path = str(tmp_path / "tokenizer.json")
    tokenizer.save(path)
    assert mismatches(path, lines_file) == 0


@pytest.fixture(scope="module")
def nmt_nfkc_charsmap(tmp_path_factory):
    """sentencepiece's compiled nmt_nfkc rules, as XLM-R's tokenizer.json carries them: the
    precompiled_charsmap of an spm.model trained here (longqa-random-model) with that rule."""
    out = tmp_path_factory.mktemp("spm") / "model"
    subprocess.run([RANDOM_MODEL, f"--out={out}", "--spm_normalization=nmt_nfkc", "--layers=S",
                    "--hidden_size=32", "--num_heads=2", "--intermediate_size=64"],
                   check=True, capture_output=True)
    from transformers.utils import sentencepiece_model_pb2_new as sentencepiece_model
    proto = sentencepiece_model.ModelProto()
    proto.ParseFromString((out / "spm.model").read_bytes())
    charsmap = proto.normalizer_spec.precompiled_charsmap
    assert len(charsmap) > 100000, len(charsmap)
    return charsmap


@pytest.mark.parametrize("converted", [False, True])
def test_trained_unigram_with_precompiled_normalizer(lines_file, tmp_path, nmt_nfkc_charsmap,
                                                     converted):
    tokenizer = Tokenizer(models.Unigram())
    precompiled = normalizers.Precompiled(nmt_nfkc_charsmap)
    # converted: the normalizer transformers' SpmConverter writes today; else XLM-R's (hub) one.
    tokenizer.normalizer = normalizers.Sequence([
        precompiled, normalizers.Strip(left=False, right=True),
        normalizers.Replace(Regex(" {2,}"), "\u2581")]) if converted else precompiled
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="always")
    trainer = trainers.UnigramTrainer(vocab_size=8000, unk_token="<unk>",
                                      special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tokenizer.train_from_iterator(mixed_lines(3000, seed=9), trainer=trainer)
    # The test lines exercise it: NFKC folds full-width forms, ligatures, odd spaces.
    changed = sum(tokenizer.normalizer.normalize_str(line) != line for line in lines_file[0])
    assert changed > len(lines_file[0]) // 2, changed
    path = str(tmp_path / "tokenizer.json")
    tokenizer.save(path)
    assert mismatches(path, lines_file) == 0


def test_unsupported_type_is_refused_by_name(tmp_path):
    tokenizer = Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    path = str(tmp_path / "tokenizer.json")
    tokenizer.save(path)
    result = subprocess.run([TOKENIZE, f"--tokenizer={path}", f"--input={path}"],
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert 'model type "WordLevel" is not supported' in result.stderr
