#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/): small valid inputs
of each format, a few broken ones, so that libFuzzer starts from the parsers' deep paths. The
files are committed; re-run after a format changes: .venv/bin/python tests/fuzz/make_seeds.py"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")

TEXTS = [
    "Anzin Gunras was born in Pofol in 1817.\n\nBefore long Anzin became a painter.",
    "The ÉLAN of naïve café-goers: e\u0301, ﬁ, ＡＢＣ１２３ and 北京是中国的首都。",
    "עברית and العربية, 👨‍👩‍👧‍👦 emoji, \u200b zero width, \t\x01 control\r\n\r\nend",
    "a" * 300 + " " + "word " * 50,
    "| Flag | Meaning |\n|---|---|\n| --all|-a | every process |\n\n  | KVX | Linux | GCC |\r\n|x|y",
    "+------+-----+\n| name | no. |\n| (a)  | é   |\n+======+=====+\n| ip   | 0   |\n+------+-----+",
]


def write(target, name, data):
    os.makedirs(os.path.join(CORPUS, target), exist_ok=True)
    with open(os.path.join(CORPUS, target, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def safetensors_bytes(tensors, pad_header=True, metadata=None):
    header, data = ({"__metadata__": metadata} if metadata else {}), b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    if pad_header:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def tokenizer_json(normalizer, pre_tokenizer, model):
    return json.dumps({"version": "1.0", "added_tokens": [
        {"id": 0, "content": "[SEP]", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}],
        "normalizer": normalizer, "pre_tokenizer": pre_tokenizer, "model": model})


def main():
    shutil.rmtree(CORPUS, ignore_errors=True)
    for i, text in enumerate(TEXTS):
        write("tokenize_text_fuzzer", f"text{i}", text)

    wordpiece = {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                 "max_input_chars_per_word": 10,
                 "vocab": {"[SEP]": 0, "[UNK]": 1, "the": 2, "caf": 3, "##e": 4, "北": 5, ",": 6}}
    bpe = {"type": "BPE", "unk_token": None, "continuing_subword_prefix": None,
           "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
           "vocab": {"[SEP]": 0, "Ġ": 1, "t": 2, "h": 3, "e": 4, "th": 5, "the": 6, "Ġthe": 7},
           "merges": ["t h", "th e", "Ġ the"]}
    unigram = {"type": "Unigram", "unk_id": 1, "byte_fallback": False,
               "vocab": [["[SEP]", 0.0], ["<unk>", 0.0], ["▁", -2.0], ["▁the", -3.1],
                         ["t", -4.0], ["h", -4.5], ["e", -4.2], ["é", -6.0]]}
    write("tokenizer_json_fuzzer", "bert", tokenizer_json(
        {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
         "strip_accents": None, "lowercase": True}, {"type": "BertPreTokenizer"}, wordpiece))
    write("tokenizer_json_fuzzer", "roberta", tokenizer_json(
        None, {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
               "use_regex": True}, bpe))
    write("tokenizer_json_fuzzer", "unigram", tokenizer_json(
        {"type": "Sequence", "normalizers": [
            {"type": "Strip", "strip_left": False, "strip_right": True},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": "▁"},
            {"type": "Replace", "pattern": {"String": "``"}, "content": "\""},
            {"type": "NFD"}, {"type": "StripAccents"}, {"type": "Lowercase"}]},
        {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": True},
        unigram))
    write("tokenizer_json_fuzzer", "precompiled_header_only", tokenizer_json(
        {"type": "Precompiled", "precompiled_charsmap": "CAAAAAAAAAAAAAAA"},
        {"type": "WhitespaceSplit"}, unigram))

    write("safetensors_fuzzer", "f32", safetensors_bytes(
        {"a.weight": ("F32", [2, 3], struct.pack("<6f", *range(6)))}))
    write("safetensors_fuzzer", "mixed", safetensors_bytes(
        {"h": ("F16", [3], b"\x00\x3c" * 3), "b": ("BF16", [1, 2], b"\x80\x3f" * 2)},
        metadata={"format": "pt"}))
    write("safetensors_fuzzer", "truncated", safetensors_bytes(
        {"x": ("F32", [4], struct.pack("<4f", 1, 2, 3, 4))})[:-5])

    for folder in ("demo", "scratch_etc"):
        with open(os.path.join(ROOT, "models", folder, "config.json"), "rb") as f:
            write("model_config_fuzzer", folder, f.read())
    # Thresholds per document length (config.json null_threshold_bands), absent from both folders.
    with open(os.path.join(ROOT, "models", "scratch_etc", "config.json")) as f:
        banded = json.load(f)
    banded["null_threshold_bands"] = [{"min_document_tokens": 4096, "null_threshold": 7.55},
                                      {"min_document_tokens": 16384, "null_threshold": -1.5}]
    write("model_config_fuzzer", "null_threshold_bands", json.dumps(banded, indent=2).encode())
    # Windows that carry a table's header (config.json table_header_tokens), off in both folders.
    with open(os.path.join(ROOT, "models", "demo", "config.json")) as f:
        headed = json.load(f)
    headed["table_header_tokens"] = 32
    write("model_config_fuzzer", "table_header_tokens", json.dumps(headed, indent=2).encode())

    for i, text in enumerate(TEXTS):
        values = [0.5, -1.0, 3.0, float("nan"), float("inf"), 2.0, -2.0, 1e30, 0.0, 7.0, 1.5]
        write("decode_fuzzer", f"nq{i}", text.encode() + b"\0" + struct.pack(f"<{len(values) - 1}f", *values[:-1]))
        write("decode_fuzzer", f"squad{i}", text.encode() + b"\0" + struct.pack(f"<{len(values)}f", *values))

    with tempfile.TemporaryDirectory() as out:
        from grpc_tools import protoc
        assert protoc.main(["protoc", f"-I{ROOT}/proto", f"--python_out={out}",
                            f"{ROOT}/proto/longqa/v1/qa.proto"]) == 0
        sys.path.insert(0, out)
        from longqa.v1 import qa_pb2
        for i, text in enumerate(TEXTS):
            request = qa_pb2.AnswerRequest(question=b"Where was Anzin Gunras born?",
                                           document=qa_pb2.Document(text=text.encode()))
            request.options.n_best = 3
            request.options.max_short_answer_tokens = 12
            write("answer_request_fuzzer", f"text{i}", bytes([i % 2]) + request.SerializeToString())
        request = qa_pb2.AnswerRequest(question=b"Who?", document=qa_pb2.Document(
            paragraphs=qa_pb2.Paragraphs(items=[t.encode() for t in TEXTS[:3]])))
        request.options.null_threshold = -3.0
        write("answer_request_fuzzer", "paragraphs", b"\x01" + request.SerializeToString())

    lines = [json.dumps({"id": "a", "question": "Who?", "document": TEXTS[0]}),
             json.dumps({"id": 2, "question": "Which?", "paragraphs": TEXTS[1:3]}),
             "", "{not json", json.dumps({"question": 5, "paragraphs": "x"})]
    write("jsonl_fuzzer", "mixed", "\n".join(lines) + "\n")
    with open(os.path.join(ROOT, "models", "demo", "checks.jsonl"), "rb") as f:
        write("jsonl_fuzzer", "checks", f.read().split(b"\n")[0][:4000] + b"\n")


if __name__ == "__main__":
    main()
