"""Soak: longqa-server under an open-loop load of twice its measured saturation rate, for
SOAK_SECONDS (120 in CI; docs/reliability.md records a 10-minute run), with a mix of good, bad,
cancelled and deadline-limited requests. Holds: the server never crashes; every request gets a
final status, and only an expected one (OK; INVALID_ARGUMENT for the bad ones; RESOURCE_EXHAUSTED
when the queue is full; DEADLINE_EXCEEDED; CANCELLED); memory does not grow: the memory in use
(resident minus tcmalloc's cache of free bytes) has its median over the run's last tenth within
+10% of its median over the tenth after warm-up (the first fifth), and the resident memory,
cache included, within +25%; a control question asked before and after gets the same answer.
Prints the rate, the outcome counts and the memory curves (resident; in use; and tcmalloc's
allocated and free bytes, which tell a leak from the allocator's cache).

Run by CTest as soak_test: .venv/bin/python -m pytest -s tests/integration/test_soak.py
(env SOAK_SECONDS, LONGQA_BUILD_DIR)."""
import collections
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

import grpc
import pytest
from longqa_process import BUILD, start_server

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOAK_SECONDS = float(os.environ.get("SOAK_SECONDS", "120"))
WORDS = ["kalo", "mine", "ruso", "tize", "vopo", "anel", "isor", "quabri", "北京", "café"]
EXPECTED = {
    "good": {"OK", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED"},
    "bad": {"INVALID_ARGUMENT"},
    "cancelled": {"CANCELLED", "OK", "RESOURCE_EXHAUSTED"},  # a cancel may come after the answer
    "deadline": {"DEADLINE_EXCEEDED", "OK", "RESOURCE_EXHAUSTED"},
}


@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    out = tmp_path_factory.mktemp("stubs")
    from grpc_tools import protoc
    assert protoc.main(["protoc", f"-I{ROOT}/proto", f"--python_out={out}",
                        f"--grpc_python_out={out}", f"{ROOT}/proto/longqa/v1/qa.proto"]) == 0
    sys.path.insert(0, str(out))
    from longqa.v1 import qa_pb2, qa_pb2_grpc
    return qa_pb2, qa_pb2_grpc


def resident_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def allocator_bytes(metrics_port):
    """tcmalloc's (allocated, free) bytes from the server's /metrics: a leak grows the first."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read()
    values = dict(re.findall(r"^(longqa_allocator_\w+) (\S+)$", text.decode(), re.M))
    return (float(values["longqa_allocator_allocated_bytes"]),
            float(values["longqa_allocator_free_bytes"]))


def document(rng, paragraphs, words):
    return "\n\n".join(" ".join(rng.choice(WORDS) for _ in range(words))
                       for _ in range(paragraphs))


def test_soak_at_twice_the_saturation_rate(tmp_path, stubs):
    qa_pb2, qa_pb2_grpc = stubs
    model = tmp_path / "model"
    subprocess.run([f"{BUILD}/tools/longqa-random-model", f"--out={model}", "--hidden_size=32",
                    "--num_heads=2", "--intermediate_size=64", "--window_tokens=32",
                    "--stride_tokens=24", "--vocab_size=300"], check=True, capture_output=True)
    # A small per-caller queue (all calls come from one address): it fills within seconds, so
    # the overload is refused (RESOURCE_EXHAUSTED) rather than queued for minutes.
    proc, port, metrics_port, _ = start_server(model, "--max_caller_queue_tokens=32768")
    # Drain the server's log: a full pipe would block it.
    log = collections.deque(maxlen=50)
    threading.Thread(target=lambda: [log.append(line) for line in proc.stderr], daemon=True).start()
    rng = random.Random(7)
    try:
        stub = qa_pb2_grpc.QuestionAnsweringStub(grpc.insecure_channel(f"127.0.0.1:{port}"))

        def good_request():
            return qa_pb2.AnswerRequest(
                question=" ".join(rng.sample(WORDS, 2)).encode(),
                document=qa_pb2.Document(text=document(rng, rng.randint(2, 12), 40).encode()),
                options=qa_pb2.AnswerOptions(n_best=3))

        control = qa_pb2.AnswerRequest(
            request_id="control", question=b"kalo ruso", document=qa_pb2.Document(text=document(random.Random(1), 6, 40)
                                                            .encode()),
            options=qa_pb2.AnswerOptions(n_best=5, null_threshold=-1e30))
        before = stub.Answer(control, timeout=60)

        # Saturation: 4 closed-loop clients for 8 s.
        done, stop = [0], time.time() + 8
        def closed_loop():
            while time.time() < stop:
                stub.Answer(good_request(), timeout=60)
                done[0] += 1
        threads = [threading.Thread(target=closed_loop) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        saturation = done[0] / 8.0
        rate = 2 * saturation

        # Open loop at twice that rate.
        calls = []  # (kind, future)
        # Every second: (seconds since start, resident bytes, allocated bytes, allocator's free
        # bytes). Resident alone mixes a leak with tcmalloc's per-size caches, which fill and
        # drain with the batches in flight (docs/reliability.md, Soak).
        samples = []
        start = time.time()
        next_sample = start
        i = 0
        while time.time() - start < SOAK_SECONDS:
            due = start + i / rate
            now = time.time()
            if due > now:
                time.sleep(due - now)
            if time.time() >= next_sample:
                rss = resident_bytes(proc.pid)
                samples.append((time.time() - start, rss, *allocator_bytes(metrics_port)))
                next_sample += 1.0
            kind = rng.choices(["good", "bad", "cancelled", "deadline"], [60, 15, 15, 10])[0]
            if kind == "bad":
                request = rng.choice([
                    qa_pb2.AnswerRequest(question=b"", document=qa_pb2.Document(text=b"kalo")),
                    qa_pb2.AnswerRequest(question=b"q", document=qa_pb2.Document(text=b"\xff\xfe")),
                    qa_pb2.AnswerRequest(question=b"q", document=qa_pb2.Document(text=b"kalo"),
                                         options=qa_pb2.AnswerOptions(n_best=1000))])
                future = stub.Answer.future(request, timeout=60)
            elif kind == "deadline":
                future = stub.Answer.future(good_request(), timeout=rng.uniform(0.005, 0.1))
            else:
                future = stub.Answer.future(good_request(), timeout=60)
                if kind == "cancelled":
                    threading.Timer(rng.uniform(0.0, 0.2), future.cancel).start()
            calls.append((kind, future))
            i += 1
            assert proc.poll() is None, f"server exited: {''.join(log)}"

        outcomes = collections.Counter()
        unexpected = []
        for kind, future in calls:
            try:
                future.result(timeout=120)
                code = "OK"
            except grpc.FutureCancelledError:
                code = "CANCELLED"
            except grpc.RpcError as error:
                code = error.code().name
            outcomes[(kind, code)] += 1
            if code not in EXPECTED[kind]:
                unexpected.append((kind, code))
        after = stub.Answer(control, timeout=60)
        assert proc.poll() is None, f"server exited: {''.join(log)}"

        # Growth, not momentary peaks (a batch's activations come and go): medians over the last
        # tenth of the run against those over the tenth after warm-up.
        def growth(value):
            first = statistics.median(value(s) for s in samples
                                      if 0.2 * SOAK_SECONDS <= s[0] < 0.3 * SOAK_SECONDS)
            last = statistics.median(value(s) for s in samples if s[0] >= 0.9 * SOAK_SECONDS)
            return first, last
        columns = {"resident": lambda s: s[1], "in use": lambda s: s[1] - s[3],
                   "allocated": lambda s: s[2], "allocator free": lambda s: s[3]}
        resident = growth(columns["resident"])
        in_use = growth(columns["in use"])
        print(f"\nsaturation {saturation:.1f} requests/s; offered {rate:.1f}/s for "
              f"{SOAK_SECONDS:g} s: {len(calls)} requests")
        for (kind, code), n in sorted(outcomes.items()):
            print(f"  {kind:10} {code:20} {n}")
        for name, column in columns.items():
            print(f"{name} MiB every 10 s: " +
                  " ".join(f"{column(s) / 2**20:.0f}" for s in samples[::10]))
        warm = [s[1] for s in samples if s[0] >= 0.2 * SOAK_SECONDS]
        for name, (first, last) in [("resident", resident), ("in use", in_use)]:
            print(f"{name} after warm-up: median {first / 2**20:.0f} MiB at first, "
                  f"{last / 2**20:.0f} MiB at the end ({last / first - 1:+.1%})")
        print(f"resident max {max(warm) / 2**20:.0f} MiB")
        assert not unexpected, collections.Counter(unexpected)
        # Overloaded two-fold, it still serves: a good share of the good requests is answered.
        assert outcomes[("good", "OK")] > 0.25 * sum(n for (k, _), n in outcomes.items()
                                                      if k == "good")
        # A leak grows the memory in use; tcmalloc's caches are bounded (its thread caches by
        # max_total_thread_cache_bytes) but swing by tens of MiB between samples.
        assert in_use[1] <= 1.10 * in_use[0]
        assert resident[1] <= 1.25 * resident[0]
        assert after == before
    finally:
        proc.terminate()
        assert proc.wait(timeout=60) == 0
