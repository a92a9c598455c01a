"""tools/window_to_etc.py: a trained window model (Cluster-Former layers) becomes an ETC folder that
keeps every encoder and head weight bit for bit, drops the centroids, adds zero relative-label
embeddings (and on request the supporting-fact head), and is served; folders it cannot convert
are refused with the reason."""
import json
import os
import subprocess
import sys

import torch
from safetensors.torch import load_file, save_file
from transformers import BertConfig, BertModel

from longqa_process import start_server
from test_import_hf import BUILD, SOURCE, TINY, import_model, perturb, save_hf

CONVERT = os.path.join(SOURCE, "tools", "window_to_etc.py")
CLI = os.path.join(BUILD, "client", "longqa")


def window_model(tmp_path):
    """A tiny random BERT imported as a Cluster-Former (SSCSC), its heads and centroids random, as
    a trained checkpoint's would be."""
    config = BertConfig(vocab_size=1003, max_position_embeddings=160, **TINY)
    model = BertModel(config)
    perturb(model, 9)
    hf_dir, cf_dir = tmp_path / "hf", tmp_path / "cf"
    save_hf(model, hf_dir)
    import_model(str(hf_dir), str(cf_dir), "--layers=SSCSC", "--clusters=8",
                 "--max_question_tokens=16", "--window_tokens=64", "--stride_tokens=48")
    weights = load_file(str(cf_dir / "model.safetensors"))
    generator = torch.Generator().manual_seed(3)
    for name in weights:
        if name.endswith("centroids") or name.split(".")[0] in ("qa_outputs", "long_answer",
                                                                  "answer_type"):
            weights[name] = torch.randn(weights[name].shape, generator=generator)
    save_file(weights, str(cf_dir / "model.safetensors"))
    config = json.loads((cf_dir / "config.json").read_text())
    config.update(untrained_heads=[], null_threshold=1.5, answer_type_pooling="paragraph")
    (cf_dir / "config.json").write_text(json.dumps(config))
    return cf_dir


def convert(src, out, *flags):
    return subprocess.run([sys.executable, CONVERT, str(src), str(out), *flags],
                          capture_output=True, text=True)


def test_weights_kept_centroids_dropped_relative_labels_zero(tmp_path):
    cf_dir = window_model(tmp_path)
    result = convert(cf_dir, tmp_path / "etc", "--hard_g2l_mask", "--max_segments=64")
    assert result.returncode == 0, result.stderr
    source = load_file(str(cf_dir / "model.safetensors"))
    lifted = load_file(str(tmp_path / "etc" / "model.safetensors"))
    kept = {name for name in source if not name.endswith("centroids")}
    assert len(kept) == len(source) - 2  # two C layers
    for name in kept:
        assert torch.equal(lifted[name], source[name].float()), name
    relative = {name for name in lifted if name.endswith("relative_key")}
    assert relative == {f"encoder.layer.{i}.attention.self.relative_key" for i in range(5)}
    for name in relative:
        assert lifted[name].shape == (2 * 12 + 3, 96) and not lifted[name].any(), name
    assert set(lifted) == kept | relative

    config = json.loads((tmp_path / "etc" / "config.json").read_text())
    assert config["architecture"] == "etc" and config["layers"] == "EEEEE"
    assert config["etc"] == {"radius": 84, "relative_clip": 12, "shared_projections": True,
                             "hard_g2l_mask": True, "max_segments": 64, "positions": "document",
                             "supporting_fact_head": False, "entity_globals": 0,
                             "pool_entity_mentions": False}
    # Calibrated for the window model, so reset; what the heads read is kept.
    assert config["null_threshold"] == 0.0 and config["answer_type_pooling"] == "paragraph"
    for key in ("window_tokens", "stride_tokens", "num_clusters"):
        assert key not in config, key
    assert (tmp_path / "etc" / "tokenizer.json").read_bytes() == (
        cf_dir / "tokenizer.json").read_bytes()


def test_part_of_prior_gives_the_mean_query_its_bias(tmp_path):
    """--part_of_prior P: the "part of" embedding a of each layer satisfies q_mean · a / sqrt(dh) =
    P in every head, q_mean = W_Q times the bias of the LayerNorm before the layer, plus b_Q;
    every other label stays zero."""
    cf_dir = window_model(tmp_path)
    assert convert(cf_dir, tmp_path / "etc", "--part_of_prior=1.5",
                   "--relative_clip=4").returncode == 0
    w = load_file(str(tmp_path / "etc" / "model.safetensors"))
    heads = json.loads((cf_dir / "config.json").read_text())["num_heads"]
    for i in range(5):
        before = ("embeddings.LayerNorm.bias" if i == 0
                  else f"encoder.layer.{i - 1}.output.LayerNorm.bias")
        q = (w[f"encoder.layer.{i}.attention.self.query.weight"] @ w[before] +
             w[f"encoder.layer.{i}.attention.self.query.bias"])
        relative = w[f"encoder.layer.{i}.attention.self.relative_key"]
        part_of = relative[2 * 4 + 1]
        dh = q.numel() // heads
        dots = (q.view(heads, dh) * part_of.view(heads, dh)).sum(1) / dh ** 0.5
        assert torch.allclose(dots, torch.full((heads,), 1.5), atol=1e-4), (i, dots)
        others = torch.cat([relative[:2 * 4 + 1], relative[2 * 4 + 2:]])
        assert not others.any(), i


def test_converted_folder_is_served_as_etc(tmp_path):
    cf_dir = window_model(tmp_path)
    # With the supporting-fact head (a training head: the server loads it and answers as usual)
    # and entity tokens (the rare words that recur below get them), pooled from their mentions.
    assert convert(cf_dir, tmp_path / "etc", "--supporting_fact_head",
                   "--entity_globals=16", "--pool_entity_mentions").returncode == 0
    config = json.loads((tmp_path / "etc" / "config.json").read_text())
    assert config["etc"]["supporting_fact_head"] is True
    assert config["etc"]["entity_globals"] == 16
    assert config["etc"]["pool_entity_mentions"] is True
    head = load_file(str(tmp_path / "etc" / "model.safetensors"))
    assert head["supporting_fact.weight"].shape == (1, 96) and head["supporting_fact.weight"].any()
    assert head["supporting_fact.bias"].shape == (1,) and not head["supporting_fact.bias"].any()
    document = tmp_path / "doc.txt"
    words = [f"w{i}" for i in range(10, 600)]
    document.write_text("\n\n".join(" ".join(words[p * 40:(p + 1) * 40]) + " zqx7081 qwv5523"
                                    for p in range(14)))
    proc, port, _, _ = start_server(str(tmp_path / "etc"))
    try:
        info = subprocess.run([CLI, "info", f"--target=127.0.0.1:{port}"], check=True,
                              capture_output=True, text=True).stdout
        assert "etc" in info and "EEEEE" in info, info
        answer = json.loads(subprocess.run(
            [CLI, "ask", f"--target=127.0.0.1:{port}", "--question", "w20 w21 w22",
             f"--file={document}", "--json", "--null_threshold=-1000"],
            check=True, capture_output=True, text=True).stdout)
        assert answer["answer_type"] != "NO_ANSWER", answer
        paragraph = answer["long_answer"]
        text = document.read_bytes()
        assert text[paragraph["byte_begin"]:paragraph["byte_end"]].startswith(b"w"), paragraph
    finally:
        proc.terminate()
        proc.wait()


def test_folders_it_cannot_convert_are_refused(tmp_path):
    cf_dir = window_model(tmp_path)
    assert convert(cf_dir, tmp_path / "etc").returncode == 0
    again = convert(tmp_path / "etc", tmp_path / "etc2")
    assert again.returncode != 0 and "is not a window model" in again.stderr, again.stderr
    config = json.loads((cf_dir / "config.json").read_text())
    config["layers"] = "SSNSC"
    (cf_dir / "config.json").write_text(json.dumps(config))
    other = convert(cf_dir, tmp_path / "etc3")
    assert other.returncode != 0 and "only S and C layers" in other.stderr, other.stderr
    assert not (tmp_path / "etc2").exists() and not (tmp_path / "etc3").exists()
