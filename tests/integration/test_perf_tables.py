"""bench/perf_tables.py: the rows it reads from perf_report.sh's raw outputs (the benches' own
printing), the FLOPs it counts for the peers, and its tables."""
import os
import sys

import pytest

SOURCE = os.environ.get("LONGQA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE, "bench"))
import perf_tables  # noqa: E402

ENCODERS = """== encoders fp32
device=cpu threads=2  fp32 GEMM 2048^3: 400.0 GFLOP/s  (BLAS core SkylakeX, CPU amx_bf16)

model                  tokens  windows    seconds     tokens/s    GFLOP/s  of GEMM
sliding-window           8192       37      6.575         1246      279.6      70%
etc                     32768        1     40.000          819      250.0      63%
== encoders bf16
device=cpu threads=2  fp32 GEMM 2048^3: 390.0 GFLOP/s  bf16 GEMM 2048^3: 1500.0 GFLOP/s  (x)
sliding-window-bf16      8192       37      2.279         3594      806.7      54%
"""
PEERS = """onnxruntime 1.31.1, 2 threads, 8 windows a call
onnxruntime-fp32       8192       37      5.742         1427
onnxruntime-int8       8192       37      1.927         4251
transformers peers: torch 1.13.0a0, 2 threads, one document a call
hf-longformer          8192        1     20.000          410
hf-bert-full           2048        1     10.000          205
"""
SERVER = """model: random weights
== documents of 300 words, 16 concurrent client(s), batching off
bench: 120 requests in 10.20 s, concurrency 16
throughput: 11.50 req/s, 16300 document tokens/s
latency ms: p50 1350.0  p90 1400.2  p99 1500.9
server ms (mean): queue 1200.5  tokenize 0.2  inference 80.0  decode 0.00  batch size 1.00
  code 0: 117
  code 8: 3
== documents of 1750 words, 1 concurrent client(s), batching on
bench: 0 requests in 10.00 s, concurrency 1
"""
MEMORY = "/x/models/demo tokens 8000 paragraphs 400 estimate 600 MiB measured 250 MiB ratio 2.40\n"
QA = ("transformers-pipeline     4    32800    100.000          328  same best span 4/4\n"
      "longqa-server             4    32800     20.000         1640  same best span 4/4\n"
      "longqa-server-bf16        4    32800     10.000         3280  same best span 3/4  "
      "9.50x the pipeline (rounds: 9.50, 9.10, 10.20)\n")

PER_ROW = 2.0 * (4 * 768 * 768 + 2 * 768 * 3072)


@pytest.fixture
def logs(tmp_path):
    for name, text in (("encoders", ENCODERS), ("peers", PEERS), ("server", SERVER),
                       ("memory", MEMORY), ("qa", QA)):
        (tmp_path / f"{name}.txt").write_text(text)
    return str(tmp_path)


def test_encoder_rows_keep_longqa_figures_and_count_the_peers(logs):
    rows = {(r["system"], r["precision"], r["tokens"]): r for r in perf_tables.encoder_rows(logs)}
    assert set(rows) == {("sliding-window", "fp32", 8192), ("etc", "fp32", 32768),
                         ("sliding-window", "bf16", 8192), ("onnxruntime", "fp32", 8192),
                         ("onnxruntime", "int8", 8192), ("hf-longformer", "fp32", 8192),
                         ("hf-bert-full", "fp32", 2048)}
    assert rows[("sliding-window", "fp32", 8192)]["of_gemm"] == pytest.approx(0.70)
    assert rows[("sliding-window", "bf16", 8192)]["gemm_gflops"] == 1500.0
    # ONNX Runtime runs longqa's 37 windows of 276 tokens: 12 layers of dense rows + 276 keys.
    ort = 12 * 37 * 276 * (PER_ROW + 4 * 768 * 276) / 5.742 / 1e9
    assert rows[("onnxruntime", "fp32", 8192)]["gflops"] == pytest.approx(ort, abs=0.1)
    # Peers are over the first run's fp32 GEMM (400), not the bf16 run's.
    assert rows[("onnxruntime", "int8", 8192)]["of_gemm"] == pytest.approx(
        12 * 37 * 276 * (PER_ROW + 4 * 768 * 276) / 1.927 / 1e9 / 400, abs=1e-3)
    full = 12 * 2068 * (PER_ROW + 4 * 768 * 2068) / 10.0 / 1e9
    assert rows[("hf-bert-full", "fp32", 2048)]["gflops"] == pytest.approx(full, abs=0.1)
    longformer = 12 * 8212 * (PER_ROW + 4 * 768 * 533) / 20.0 / 1e9
    assert rows[("hf-longformer", "fp32", 8192)]["gflops"] == pytest.approx(longformer, abs=0.1)


def test_server_memory_and_qa_rows(logs):
    server = perf_tables.server_rows(logs)
    assert len(server) == 1  # the run without a throughput line is left out
    assert server[0] == {"words": 300, "clients": 16, "batching": "off", "requests_per_s": 11.5,
                         "tokens_per_s": 16300.0, "p50_ms": 1350.0, "p99_ms": 1500.9,
                         "queue_ms": 1200.5, "batch_requests": 1.0, "errors": 3}
    memory = perf_tables.memory_rows(logs)
    assert memory == [{"model": "demo", "tokens": 8000, "paragraphs": 400, "estimate_mib": 600,
                       "peak_mib": 250, "kib_per_token": 32.0}]
    qa = perf_tables.qa_rows(logs)
    assert [(r["system"], r["tokens_per_s"], r["same_best_span"]) for r in qa] == [
        ("transformers-pipeline", 328.0, "4/4"), ("longqa-server", 1640.0, "4/4"),
        ("longqa-server-bf16", 3280.0, "3/4")]
    # The median of the rounds' ratios where the run printed it (alternating rounds), else the
    # quotient of the medians (runs before session 37).
    assert [r["vs_pipeline"] for r in qa] == ["", 5.0, 9.5]


def test_tables_and_csv(logs, tmp_path):
    rows = perf_tables.encoder_rows(logs)
    table = perf_tables.encoder_table(rows).splitlines()
    assert table[0] == "| system | precision | 2048 | 8192 | 32768 |"
    assert "| sliding-window | fp32 |  | 1,246 (70%) |  |" in table
    perf_tables.write_csv(str(tmp_path / "encoders.csv"), rows)
    lines = (tmp_path / "encoders.csv").read_text().splitlines()
    assert lines[0].startswith("system,precision,tokens,windows,seconds,tokens_per_s")
    assert len(lines) == 1 + len(rows)
