"""Turns the raw outputs of bench/perf_report.sh into CSV files, Markdown tables and PNG plots.

Inputs (LOGS, written by perf_report.sh): encoders.txt (longqa-encoder-bench, one run per
precision), peers.txt (bench/peers/ort_bench.py and hf_bench.py), qa.txt
(bench/peers/qa_pipeline_bench.py), server.txt (bench/server_bench.sh), memory.txt
(longqa-memory-bench lines). Any of them may be missing: its tables are skipped.
Outputs (OUT): encoders.csv, qa.csv, server.csv, memory.csv, tables.md and
encoders_tokens_per_s.png, encoders_latency.png, encoders_of_gemm.png, server.png, memory.png.

Usage: perf_tables.py LOGS OUT   (matplotlib: the ONNX Runtime venv has it)
"""
import csv
import os
import re
import sys

D, FFN, LAYERS, QUESTION = 768, 3072, 12, 20
ROW = re.compile(r"^(\S+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)(?:\s+([\d.]+)\s+(\d+)%)?\s*$")
GEMM = re.compile(r"fp32 GEMM 2048\^3: ([\d.]+) GFLOP/s(?:\s+bf16 GEMM 2048\^3: ([\d.]+))?")


def read(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read().splitlines()


def precision_of(name):
    """("sliding-window", "bf16") of "sliding-window-bf16"; fp32 where the name says none."""
    for p in ("fp32", "bf16", "int8"):
        if name.endswith("-" + p):
            return name[: -len(p) - 1], p
    return name, "fp32"


def peer_gflop(name, tokens, windows):
    """FLOPs of a peer's run: dense layers per row plus attention per (row, key) it computes."""
    per_row = 2.0 * (4 * D * D + 2 * D * FFN)
    if name.startswith("onnxruntime"):  # the windows of longqa's sliding-window rows
        rows, keys = windows * (QUESTION + min(256, tokens)), QUESTION + min(256, tokens)
    elif name == "hf-longformer":  # 2w+1 keys in the window plus the global question tokens
        rows, keys = QUESTION + tokens, 513 + QUESTION
    elif name == "hf-bigbird":  # 3 sliding + 3 random + 2 global blocks of 64
        rows, keys = QUESTION + tokens, 8 * 64
    else:  # full attention
        rows = keys = QUESTION + tokens
    return LAYERS * rows * (per_row + 4.0 * D * keys) / 1e9


def encoder_rows(logs):
    rows, fp32_gemm, gemm = [], None, None
    for line in read(os.path.join(logs, "encoders.txt")) + read(os.path.join(logs, "peers.txt")):
        g = GEMM.search(line)
        if g:
            fp32_gemm = fp32_gemm or float(g.group(1))
            gemm = float(g.group(2) or g.group(1))
            continue
        m = ROW.match(line)
        if not m or m.group(1) == "model":
            continue
        name, tokens, windows, seconds, rate = (m.group(1), int(m.group(2)), int(m.group(3)),
                                                float(m.group(4)), float(m.group(5)))
        system, precision = precision_of(name)
        if m.group(6):  # longqa's own rows carry FLOP/s and the share of their GEMM
            gflops, of_gemm, reference = float(m.group(6)), float(m.group(7)) / 100, gemm
        else:  # peers: counted here, over the fp32 GEMM of the run
            gflops, reference = peer_gflop(system, tokens, windows) / seconds, fp32_gemm
            of_gemm = gflops / fp32_gemm if fp32_gemm else float("nan")
        rows.append({"system": system, "precision": precision, "tokens": tokens,
                     "windows": windows, "seconds": seconds, "tokens_per_s": rate,
                     "gflops": round(gflops, 1), "of_gemm": round(of_gemm, 3),
                     "gemm_gflops": reference})
    return rows


def qa_rows(logs):
    out = []
    for line in read(os.path.join(logs, "qa.txt")):
        m = re.match(r"^(transformers-pipeline|longqa-server\S*)\s+(\d+)\s+(\d+)\s+([\d.]+)"
                     r"\s+(\d+)\s+same best span (\d+)/(\d+)(?:\s+([\d.]+)x the pipeline)?", line)
        if m:  # (runs before session 37 printed no ratio: it is then the medians' quotient)
            out.append({"system": m.group(1), "documents": int(m.group(2)),
                        "tokens": int(m.group(3)), "seconds": float(m.group(4)),
                        "tokens_per_s": float(m.group(5)),
                        "same_best_span": f"{m.group(6)}/{m.group(7)}",
                        "vs_pipeline": float(m.group(8)) if m.group(8) else None})
    pipeline = next((r for r in out if r["system"] == "transformers-pipeline"), None)
    for r in out:
        if r is pipeline:
            r["vs_pipeline"] = ""
        elif r["vs_pipeline"] is None and pipeline:
            r["vs_pipeline"] = round(pipeline["seconds"] / r["seconds"], 2)
    return out


def server_rows(logs):
    out, row = [], None
    for line in read(os.path.join(logs, "server.txt")):
        m = re.match(r"== documents of (\d+) words, (\d+) concurrent client\(s\), batching (\w+)",
                     line)
        if m:
            row = {"words": int(m.group(1)), "clients": int(m.group(2)), "batching": m.group(3)}
            out.append(row)
            continue
        if row is None:
            continue
        m = re.match(r"throughput: ([\d.]+) req/s, (\d+) document tokens/s", line)
        if m:
            row["requests_per_s"], row["tokens_per_s"] = float(m.group(1)), float(m.group(2))
        m = re.match(r"latency ms: p50 ([\d.]+)\s+p90 ([\d.]+)\s+p99 ([\d.]+)", line)
        if m:
            row["p50_ms"], row["p99_ms"] = float(m.group(1)), float(m.group(3))
        m = re.match(r"server ms \(mean\): queue ([\d.]+).*batch size ([\d.]+)", line)
        if m:
            row["queue_ms"], row["batch_requests"] = float(m.group(1)), float(m.group(2))
        m = re.match(r"\s+code (\d+): (\d+)", line)
        if m and m.group(1) != "0":
            row["errors"] = row.get("errors", 0) + int(m.group(2))
    return [r for r in out if "requests_per_s" in r]


def memory_rows(logs):
    out = []
    for line in read(os.path.join(logs, "memory.txt")):
        m = re.match(r"^(\S+) tokens (\d+) paragraphs (\d+) estimate (\d+) MiB measured (-?\d+) MiB"
                     r"(?: tensors (\d+) MiB)?", line)
        if m:
            tokens, measured = int(m.group(2)), int(m.group(5))
            row = {"model": os.path.basename(m.group(1).rstrip("/")), "tokens": tokens,
                   "paragraphs": int(m.group(3)), "estimate_mib": int(m.group(4)),
                   "peak_mib": measured, "kib_per_token": round(measured * 1024 / tokens, 1)}
            if m.group(6) is not None:  # the peak of live tensors (logs since session 25)
                tensors = int(m.group(6))
                row["tensors_mib"] = tensors
                row["tensor_kib_per_token"] = round(tensors * 1024 / tokens, 1)
            out.append(row)
    return out


def write_csv(path, rows):
    if not rows:
        return
    fields = []
    for r in rows:
        fields += [k for k in r if k not in fields]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def markdown(rows, columns):
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(str(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def encoder_table(rows):
    """One line per system and precision, tokens/s per length (the plots' numbers)."""
    lengths = sorted({r["tokens"] for r in rows})
    keyed = {}  # insertion-ordered: the order the runs printed them
    for r in rows:
        line = keyed.setdefault((r["system"], r["precision"]),
                                {"system": r["system"], "precision": r["precision"]})
        line[str(r["tokens"])] = f"{r['tokens_per_s']:,.0f} ({100 * r['of_gemm']:.0f}%)"
    return markdown(list(keyed.values()), ["system", "precision"] + [str(t) for t in lengths])


def plots(out, encoders, server, memory):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series, systems = {}, []
    for r in encoders:
        series.setdefault((r["system"], r["precision"]), []).append(r)
        systems += [r["system"]] if r["system"] not in systems else []
    # One colour a system, one line style a precision; peers (not longqa) drawn with squares.
    colour = {name: plt.get_cmap("tab10")(i % 10) for i, name in enumerate(systems)}
    style = {"fp32": "-", "int8": "-.", "bf16": ":"}
    for name, key, ylabel, logy in (("encoders_tokens_per_s", "tokens_per_s", "context tokens/s",
                                     True),
                                    ("encoders_latency", "seconds", "seconds a document", True),
                                    ("encoders_of_gemm", "of_gemm",
                                     "FLOP/s over the run's GEMM", False)):
        fig, ax = plt.subplots(figsize=(9, 5.5))
        for (system, precision), points in series.items():
            points = sorted(points, key=lambda r: r["tokens"])
            longqa = system.startswith(("sliding", "cluster", "etc"))
            ax.plot([p["tokens"] for p in points], [p[key] for p in points], style[precision],
                    color=colour[system], marker="o" if longqa else "s", markersize=3,
                    label=f"{system} {precision}" + ("" if longqa else " (peer)"))
        ax.set_xscale("log", base=2)
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel("document tokens")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        fig.savefig(os.path.join(out, name + ".png"), dpi=110)
        plt.close(fig)
    if server:
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, words in zip(axes, sorted({r["words"] for r in server})):
            for batching in ("on", "off"):
                points = sorted((r for r in server if r["words"] == words and
                                 r["batching"] == batching), key=lambda r: r["clients"])
                if points:
                    ax.plot([p["clients"] for p in points], [p["requests_per_s"] for p in points],
                            marker="o", label=f"batching {batching}")
            ax.set_xscale("log", base=2)
            ax.set_title(f"documents of {words} words")
            ax.set_xlabel("concurrent clients")
            ax.set_ylabel("requests/s")
            ax.grid(True, alpha=0.3)
            ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, "server.png"), dpi=110)
        plt.close(fig)
    if memory:
        fig, ax = plt.subplots(figsize=(7, 4))
        for model in sorted({r["model"] for r in memory}):
            points = sorted((r for r in memory if r["model"] == model), key=lambda r: r["tokens"])
            ax.plot([p["tokens"] for p in points], [p["kib_per_token"] for p in points], marker="o",
                    label=model)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("document tokens")
        ax.set_ylabel("peak KiB a token")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, "memory.png"), dpi=110)
        plt.close(fig)


def main():
    logs, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    encoders, qa, server, memory = (encoder_rows(logs), qa_rows(logs), server_rows(logs),
                                    memory_rows(logs))
    for name, rows in (("encoders", encoders), ("qa", qa), ("server", server),
                       ("memory", memory)):
        write_csv(os.path.join(out, name + ".csv"), rows)
    sections = []
    if encoders:
        sections.append("### Encoders: context tokens/s (FLOP/s over the run's GEMM)\n\n"
                        + encoder_table(encoders))
    if qa:
        sections.append("### longqa-server against the transformers QA pipeline\n\n"
                        + markdown(qa, ["system", "documents", "tokens", "seconds",
                                        "tokens_per_s", "same_best_span", "vs_pipeline"]))
    if server:
        sections.append("### Server\n\n" + markdown(server, [
            "words", "clients", "batching", "requests_per_s", "p50_ms", "p99_ms", "queue_ms",
            "batch_requests", "errors"]))
    if memory:
        sections.append("### Peak memory a request adds\n\n" + markdown(memory, [
            "model", "tokens", "paragraphs", "estimate_mib", "peak_mib", "kib_per_token",
            "tensors_mib", "tensor_kib_per_token"]))
    text = "\n\n".join(sections) + "\n"
    with open(os.path.join(out, "tables.md"), "w") as f:
        f.write(text)
    print(text)
    plots(out, encoders, server, memory)


if __name__ == "__main__":
    main()
