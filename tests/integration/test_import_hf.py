"""tools/import_hf.py against transformers: a converted checkpoint computes what the Hugging Face
model computes. Tiny random BERT, RoBERTa and XLM-R configs with odd sizes (hidden 96, 3 heads,
5 layers, vocabularies that are not a multiple of 8; every weight perturbed, LayerNorms included)
and the real all-MiniLM-L6-v2 are converted, run by longqa-hidden-states on random ids, and
compared after the embeddings and after every layer with transformers' hidden states.
Tolerance (fp32): max |difference| <= 1e-5 x the tensor's largest magnitude; each figure printed.
"""
import json
import os
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer, models
from transformers import (BertConfig, BertForQuestionAnswering, BertModel, RobertaConfig,
                          RobertaModel, XLMRobertaConfig, XLMRobertaModel)

SOURCE = os.environ.get("LONGQA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("LONGQA_BUILD_DIR", os.path.join(SOURCE, "build"))
IMPORTER = os.path.join(SOURCE, "tools", "import_hf.py")
HIDDEN_STATES = os.path.join(BUILD, "tools", "longqa-hidden-states")
MINILM = os.path.join(SOURCE, "third_party", "minilm")
RELATIVE_TOLERANCE = 1e-5

BERT_SPECIALS = ["[PAD]", "[unused0]", "[UNK]", "[CLS]", "[SEP]"]
ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<p>"]


def write_tokenizer(path, vocab_size, specials):
    """A WordPiece tokenizer.json whose vocabulary has the checkpoint's size and specials."""
    vocab = {piece: i for i, piece in enumerate(specials)}
    for i in range(len(specials), vocab_size):
        vocab[f"w{i}"] = i
    Tokenizer(models.WordPiece(vocab, unk_token=specials[3 if specials is ROBERTA_SPECIALS else 2])
              ).save(os.path.join(path, "tokenizer.json"))


def save_hf(model, hf_dir, specials=None):
    """A Hugging Face folder of `model` with a WordPiece tokenizer.json of its vocabulary size."""
    model.save_pretrained(hf_dir, safe_serialization=True)
    write_tokenizer(hf_dir, model.config.vocab_size, specials or BERT_SPECIALS)


def perturb(model, seed):
    """Random values in every weight, so a LayerNorm or bias mapped wrongly cannot hide."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.05 + (p == 1).float())


def import_model(hf_dir, out_dir, *extra):
    subprocess.run([sys.executable, IMPORTER, hf_dir, out_dir, *extra], check=True,
                   capture_output=True, text=True)
    with open(os.path.join(out_dir, "config.json")) as f:
        return json.load(f)


def longqa_states(model_dir, ids, question_tokens, out):
    subprocess.run([HIDDEN_STATES, f"--model_dir={model_dir}", f"--ids={','.join(map(str, ids))}",
                    f"--question_tokens={question_tokens}", f"--out={out}"],
                   check=True, capture_output=True, text=True)
    return load_file(out)


def compare(name, model, model_dir, ids, question_tokens, tmp_path):
    """Every hidden state of longqa against transformers; returns the worst relative error."""
    ours = longqa_states(model_dir, ids, question_tokens, str(tmp_path / f"{name}.safetensors"))
    with torch.no_grad():
        ref = model(torch.tensor([ids]), output_hidden_states=True).hidden_states
    worst = 0.0
    for i, expected in enumerate(ref):
        key = "embeddings" if i == 0 else f"layer.{i}"
        got = ours[key]
        expected = expected[0]
        assert got.shape == expected.shape, key
        rel = ((got - expected).abs().max() / expected.abs().max()).item()
        print(f"{name} {key}: max |diff| / max |ref| = {rel:.2e}")
        worst = max(worst, rel)
    assert worst <= RELATIVE_TOLERANCE, f"{name}: {worst:.2e}"
    return worst


def random_ids(vocab_size, n, seed, low):
    g = torch.Generator().manual_seed(seed)
    # Ids from `low` up: no padding id, so RoBERTa's position numbering has no gaps.
    return torch.randint(low, vocab_size, (n,), generator=g).tolist()


TINY = dict(hidden_size=96, num_attention_heads=3, num_hidden_layers=5, intermediate_size=100,
            hidden_act="gelu", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


@pytest.mark.parametrize("family", ["bert", "roberta", "xlm-roberta"])
def test_tiny_random_encoders_match_transformers(family, tmp_path):
    if family == "bert":
        config = BertConfig(vocab_size=1003, max_position_embeddings=160, type_vocab_size=2,
                            layer_norm_eps=1e-12, **TINY)
        model, specials, extra = BertModel(config), BERT_SPECIALS, []
    else:
        cls, model_cls = ((RobertaConfig, RobertaModel) if family == "roberta"
                          else (XLMRobertaConfig, XLMRobertaModel))
        config = cls(vocab_size=1001, max_position_embeddings=162, type_vocab_size=1,
                     pad_token_id=1, layer_norm_eps=1e-5, **TINY)
        model, specials, extra = model_cls(config), ROBERTA_SPECIALS, ["--paragraph_token=<p>"]
    perturb(model, 7)
    model.eval()
    hf_dir, out_dir = tmp_path / "hf", tmp_path / "longqa"
    save_hf(model, hf_dir, specials)
    converted = import_model(str(hf_dir), str(out_dir), "--max_question_tokens=16", *extra)
    assert converted["position_offset"] == (0 if family == "bert" else 2)
    assert converted["untrained_heads"] == ["qa_outputs", "long_answer", "answer_type"]
    ids = random_ids(config.vocab_size, 120, 3, len(specials))
    compare(family, model, str(out_dir), ids, 12, tmp_path)


@pytest.mark.skipif(not os.path.exists(os.path.join(MINILM, "model.safetensors")),
                    reason="deploy/install-deps.sh unpacks all-MiniLM-L6-v2 into third_party/minilm")
def test_all_minilm_l6_v2_matches_transformers(tmp_path):
    model = BertModel.from_pretrained(MINILM, add_pooling_layer=False)
    model.eval()
    out_dir = tmp_path / "minilm"
    converted = import_model(MINILM, str(out_dir))
    assert converted["hidden_size"] == 384 and converted["layers"] == "SSSSSS"
    assert converted["special_tokens"]["cls"] == 101 and converted["special_tokens"]["sep"] == 102
    assert converted["window_tokens"] + 66 <= 512
    ids = [101] + random_ids(30522, 18, 5, 1000) + [102] + random_ids(30522, 280, 6, 1000)
    compare("all-MiniLM-L6-v2", model, str(out_dir), ids, 20, tmp_path)


def test_question_answering_head_is_kept_and_not_marked_untrained(tmp_path):
    config = BertConfig(vocab_size=1003, max_position_embeddings=160, **TINY)
    model = BertForQuestionAnswering(config)
    perturb(model, 11)
    hf_dir, out_dir = tmp_path / "hf", tmp_path / "longqa"
    save_hf(model, hf_dir)
    converted = import_model(str(hf_dir), str(out_dir), "--max_question_tokens=16")
    # A QA checkpoint is served as it was fine-tuned (qa_format squad: test_squad_parity.py),
    # which reads the span head only: no head it uses is untrained.
    assert converted["qa_format"] == "squad" and converted["untrained_heads"] == []
    assert converted["window_tokens"] == 160 - 0 - (16 + 3)  # CLS, SEP, question, SEP
    nq = import_model(str(hf_dir), str(tmp_path / "nq"), "--max_question_tokens=16",
                      "--qa_format=nq")
    assert nq["qa_format"] == "nq" and nq["untrained_heads"] == ["long_answer", "answer_type"]
    weights = load_file(str(out_dir / "model.safetensors"))
    assert torch.equal(weights["qa_outputs.weight"], model.qa_outputs.weight.detach())
    assert "encoder.layer.4.output.LayerNorm.bias" in weights  # the bert. prefix is gone


def test_cluster_and_etc_layouts(tmp_path):
    config = BertConfig(vocab_size=1003, max_position_embeddings=160, **TINY)
    hf_dir = tmp_path / "hf"
    save_hf(BertModel(config), hf_dir)
    cf = import_model(str(hf_dir), str(tmp_path / "cf"), "--layers=SSCSC", "--clusters=8",
                      "--max_question_tokens=16")
    assert cf["num_clusters"] == [8, 8] and cf["qa_format"] == "nq"
    plain = import_model(str(hf_dir), str(tmp_path / "plain"), "--max_question_tokens=16")
    assert plain["qa_format"] == "nq"  # no QA head: a model to fine-tune in longqa's layout
    weights = load_file(str(tmp_path / "cf" / "model.safetensors"))
    assert weights["encoder.layer.2.centroids"].shape == (8, 96)
    etc = import_model(str(hf_dir), str(tmp_path / "etc"), "--architecture=etc")
    assert etc["layers"] == "EEEEE" and etc["architecture"] == "etc"
    weights = load_file(str(tmp_path / "etc" / "model.safetensors"))
    # The lift keeps the pretrained positions, numbered through the document...
    assert etc["etc"]["positions"] == "document" and etc["max_position_embeddings"] == 160
    assert etc["etc"]["max_segments"] == 256 and etc["etc"]["hard_g2l_mask"] is False
    assert weights["embeddings.position_embeddings.weight"].shape == (160, 96)
    assert weights["encoder.layer.0.attention.self.relative_key"].shape == (2 * 12 + 3, 96)
    # ...or drops them for ETC's relative labels only.
    bare = import_model(str(hf_dir), str(tmp_path / "etc_bare"), "--architecture=etc",
                        "--etc_positions=none", "--etc_max_segments=1", "--etc_hard_g2l_mask")
    assert bare["etc"]["positions"] == "none" and bare["etc"]["max_segments"] == 1
    assert bare["etc"]["hard_g2l_mask"] is True
    weights = load_file(str(tmp_path / "etc_bare" / "model.safetensors"))
    assert "embeddings.position_embeddings.weight" not in weights


def test_unsupported_checkpoints_fail_with_a_reason(tmp_path):
    config = BertConfig(vocab_size=1003, max_position_embeddings=160,
                        **{**TINY, "hidden_act": "gelu_new"})
    hf_dir = tmp_path / "hf"
    save_hf(BertModel(config), hf_dir)
    result = subprocess.run([sys.executable, IMPORTER, str(hf_dir), str(tmp_path / "out")],
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert "hidden_act 'gelu_new'" in result.stderr


def test_converted_minilm_is_served_with_its_own_tokenizer(tmp_path):
    """A converted folder (tokenizer.json, untrained heads) starts in longqa-server, warns about
    the heads, and answers with n-best spans whose byte offsets cut the document at token
    boundaries of MiniLM's own tokenizer."""
    from longqa_process import start_server
    from tokenizers import Tokenizer as HfTokenizer
    model_dir = str(tmp_path / "minilm")
    import_model(MINILM, model_dir, "--window_tokens", "128", "--stride_tokens", "96")
    proc, port, _, log = start_server(model_dir)
    try:
        assert "untrained" in log and "qa_outputs" in log
        document = ("Zürich is a city in Switzerland. Ada Lovelace wrote the first program in "
                    "1843.\n\nThe Rhine flows through Basel — and Köln!")
        doc_path = tmp_path / "doc.txt"
        doc_path.write_text(document)
        out = subprocess.run([os.path.join(BUILD, "client", "longqa"), "ask",
                              f"--target=127.0.0.1:{port}", "--question",
                              "When did Ada Lovelace write the first program?",
                              f"--file={doc_path}", "--json", "--n_best=5", "--null_threshold=-100"],
                             check=True, capture_output=True, text=True).stdout
        answer = json.loads(out)
        spans = [s for key in ("shortAnswers", "short_answers") for s in answer.get(key, [])]
        assert spans, out
        text = document.encode()
        encoding = HfTokenizer.from_file(os.path.join(MINILM, "tokenizer.json")).encode(
            document, add_special_tokens=False)
        starts = {len(document[:b].encode()) for b, _ in encoding.offsets}
        ends = {len(document[:e].encode()) for _, e in encoding.offsets}
        for span in spans:
            # Proto3 JSON: camelCase names, zero values left out.
            begin = int(span.get("byteBegin", span.get("byte_begin", 0)))
            end = int(span.get("byteEnd", span.get("byte_end", 0)))
            assert begin < end
            assert begin in starts and end in ends, (span, out)
            text[begin:end].decode()  # whole characters
    finally:
        proc.terminate()
        proc.wait(timeout=60)
