"""longqa-server against transformers' question-answering pipeline on the same converted model,
the same windows and the same documents (issue 22, part c). The model: all-MiniLM-L6-v2 under a
random QA head (as tests/integration/test_squad_parity.py, which checks that both give the same
best span), converted by tools/import_hf.py with windows of 256 context tokens and a stride of
224; the pipeline gets max_seq_len = question + 3 + 256 and doc_stride = 32 (its overlap), so both
run the same windows. Documents: runs of paragraphs of /usr/share/common-licenses of about
--tokens MiniLM tokens. Each document is asked once of each, one at a time (no batching across
documents), the server over its HTTP API. Rounds alternate the systems (the pipeline, then each
server), so that the machine's drift over minutes (25% on these machines) moves every system of a
round alike; a server's ratio to the pipeline is the median of its rounds' ratios. Prints one row
per system: documents, context tokens, median seconds, tokens/s, how many best spans agree with
the pipeline's and, for a server, that ratio; one server row for each of --precisions
(fp32,bf16: the bf16 server against the same fp32 pipeline).

Runs in the test venv (.venv). Usage:
  qa_pipeline_bench.py [--build build] [--tokens 8192] [--documents 4] [--threads 2]
                       [--precisions fp32,bf16]
"""
import argparse
import base64
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

import torch
from transformers import AutoTokenizer, BertForQuestionAnswering, pipeline

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MINILM = os.path.join(ROOT, "third_party", "minilm")
LICENSES = "/usr/share/common-licenses"
WINDOW, STRIDE, MAX_ANSWER = 256, 224, 15
QUESTIONS = ["What may you do with the software?", "Who holds the copyright?",
             "When does the license terminate?", "Which warranty is disclaimed?"]


def documents(tokenizer, count, target):
    pool = []
    for name in sorted(os.listdir(LICENSES)):
        path = os.path.join(LICENSES, name)
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, encoding="utf-8") as f:
                pool += [" ".join(p.split()) for p in f.read().split("\n\n") if len(p.split()) > 5]
    rng, docs = random.Random(3), []
    while len(docs) < count:
        parts, tokens, i = [], 0, rng.randrange(len(pool))
        while tokens < target:
            parts.append(pool[i % len(pool)])
            tokens += len(tokenizer(parts[-1], add_special_tokens=False)["input_ids"])
            i += 1
        docs.append(("\n\n".join(parts), QUESTIONS[len(docs) % len(QUESTIONS)], tokens))
    return docs


def start_server(build, model_dir, threads, precision):
    proc = subprocess.Popen([os.path.join(build, "server", "longqa-server"),
                             f"--model_dir={model_dir}", "--listen=127.0.0.1:0",
                             "--metrics_listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
                             f"--threads={threads}", f"--precision={precision}"],
                            stderr=subprocess.PIPE, text=True)
    log = ""
    for line in proc.stderr:
        log += line
        m = re.search(r"HTTP API on port (\d+)", line)
        if m:
            return proc, int(m.group(1))
    raise SystemExit(f"server did not start:\n{log}")


def ask(port, question, text):
    body = json.dumps({"question": base64.b64encode(question.encode()).decode(),
                       "document": {"text": base64.b64encode(text.encode()).decode()},
                       "options": {"maxShortAnswerTokens": MAX_ANSWER, "nBest": 1,
                                   "nullThreshold": -1e30}}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/answer", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as reply:
        answer = json.loads(reply.read())
    best = answer["shortAnswers"][0]
    return int(best["byteBegin"]), int(best["byteEnd"])  # proto3 JSON: 64-bit ints as strings


def timed(run):
    """Seconds of one call of run(), and its result."""
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--documents", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--precisions", default="fp32", help="the server's, comma-separated")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds, each asking every system the documents once; medians "
                             "are reported (this machine's noise moved single rounds by 25%%)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(5)
    model = BertForQuestionAnswering.from_pretrained(MINILM).eval()
    with torch.no_grad():
        model.qa_outputs.weight.normal_(0.0, 0.1)
        model.qa_outputs.bias.zero_()
    tokenizer = AutoTokenizer.from_pretrained(MINILM)
    docs = documents(tokenizer, args.documents, args.tokens)
    tokens = sum(d[2] for d in docs)
    with tempfile.TemporaryDirectory() as work:
        model.save_pretrained(os.path.join(work, "hf"), safe_serialization=True)
        tokenizer.save_pretrained(os.path.join(work, "hf"))
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "import_hf.py"),
                        os.path.join(work, "hf"), os.path.join(work, "longqa"),
                        f"--window_tokens={WINDOW}", f"--stride_tokens={STRIDE}"],
                       check=True, capture_output=True)
        qa = pipeline("question-answering", model=model, tokenizer=tokenizer, device=-1)
        qa(question=docs[0][1], context=docs[0][0][:2000])  # warm-up

        def ask_pipeline():
            found = []
            for text, question, _ in docs:
                q = len(tokenizer(question, add_special_tokens=False)["input_ids"])
                ref = qa(question=question, context=text, max_seq_len=q + 3 + WINDOW,
                         doc_stride=WINDOW - STRIDE, max_answer_len=MAX_ANSWER)
                found.append((len(text[:ref["start"]].encode()), len(text[:ref["end"]].encode())))
            return found

        servers = {}  # precision: (process, port), all started (and warmed up) before round 1
        try:
            for precision in args.precisions.split(","):
                servers[precision] = start_server(args.build, os.path.join(work, "longqa"),
                                                  args.threads, precision)
                ask(servers[precision][1], docs[0][1], docs[0][0][:2000])  # warm-up
            rounds = []  # each round: {system: (seconds, spans)}
            for _ in range(max(1, args.rounds)):
                this = {"pipeline": timed(ask_pipeline)}
                for precision, (_, port) in servers.items():
                    this[precision] = timed(
                        lambda: [ask(port, question, text) for text, question, _ in docs])
                rounds.append(this)
        finally:
            for proc, _ in servers.values():
                proc.terminate()
                proc.wait(timeout=60)
        pipeline_s = median(r["pipeline"][0] for r in rounds)
        spans = rounds[0]["pipeline"][1]
        print(f"qa pipeline: MiniLM + random QA head, windows {WINDOW}/{STRIDE}, {len(docs)} "
              f"documents of ~{args.tokens} tokens, {args.threads} threads, median of "
              f"{len(rounds)} alternating rounds", flush=True)
        print(f"{'transformers-pipeline':22} {len(docs):4d} {tokens:8d} {pipeline_s:10.3f} "
              f"{tokens / pipeline_s:12.0f}  same best span {len(docs)}/{len(docs)}", flush=True)
        for precision in servers:
            s = median(r[precision][0] for r in rounds)
            ratios = [r["pipeline"][0] / r[precision][0] for r in rounds]
            same = sum(a == b for a, b in zip(rounds[0][precision][1], spans))
            name = "longqa-server" + ("" if precision == "fp32" else "-" + precision)
            print(f"{name:22} {len(docs):4d} {tokens:8d} {s:10.3f} {tokens / s:12.0f}  "
                  f"same best span {same}/{len(docs)}  {median(ratios):.2f}x the pipeline "
                  f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)})", flush=True)


if __name__ == "__main__":
    main()
