"""The hostile-clients issue's figures on a served model (docs/reliability.md, "Hostile inputs"):
peak resident memory per hostile document, a control question's latency after abandoned big
requests and behind another caller's backlog, eight concurrent over-limit 5 MB documents, a
scrape beside 24 idle connections, SIGTERM with a 3 s drain. Talks to the server only through the
`longqa` CLI and raw sockets; the server's peak memory is read from /proc/<pid>/status (VmHWM), one
fresh server per measurement that needs its own peak.

Usage: .venv/bin/python bench/hostile_figures.py [--model_dir=models/demo] [--build=build]
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
import longqa_process  # noqa: E402  (the tests' server launcher)


def start_server(build, model_dir):
    """A fresh server on [::] (two caller addresses: 127.0.0.1 and ::1) with a 3 s drain."""
    longqa_process.BUILD = build
    proc, port, metrics_port, _ = longqa_process.start_server(
        model_dir, "--listen=[::]:0", "--drain_timeout_s=3")
    return proc, port, metrics_port


def peak_mib(proc):
    for line in open(f"/proc/{proc.pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return -1


def ask(build, target, path, question="What is the name of the river?", timeout_s=600):
    start = time.monotonic()
    out = subprocess.run([f"{build}/client/longqa", "ask", f"--target={target}",
                          f"--timeout_s={timeout_s}", "--question", question, "--file", path],
                         capture_output=True, text=True)
    return time.monotonic() - start, out.returncode, (out.stdout + out.stderr).strip().split("\n")[0]


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model_dir", default="models/demo")
    ap.add_argument("--build", default="build")
    ap.add_argument("--sample", default="models/scratch_etc/sample.txt")
    a = ap.parse_args()
    sample = open(a.sample).read()
    docs = {
        "4,000 one-line paragraphs": write("/tmp/h_lines.txt", "".join(
            f"Line {p} of the river list.\n\n" for p in range(4000))),
        "150 KB of ordinary paragraphs": write("/tmp/h_150k.txt", (sample * 40)[:150000]),
    }
    control = write("/tmp/h_control.txt", sample[:3000])
    big = write("/tmp/h_big.txt", (sample * 10)[:60000])
    print(f"model {a.model_dir}, {os.cpu_count()} CPUs, 2 threads")

    for name, path in docs.items():  # 1: memory per hostile document, a fresh server each
        proc, port, _ = start_server(a.build, a.model_dir)
        t, rc, first = ask(a.build, f"127.0.0.1:{port}", path)
        print(f"[1] {name}: {t:.1f} s, exit {rc} ({first}), peak resident {peak_mib(proc):.0f} MiB")
        proc.terminate(); proc.wait()

    proc, port, metrics_port = start_server(a.build, a.model_dir)
    v4, v6 = f"127.0.0.1:{port}", f"[::1]:{port}"
    solo, rc, _ = ask(a.build, v4, control)
    big_solo, _, _ = ask(a.build, v4, big)
    print(f"    control question alone {solo:.2f} s; 60 KB document alone {big_solo:.1f} s")
    # 2: four clients send the big document and give up after 1 s.
    quitters = [threading.Thread(target=ask, args=(a.build, v6, big), kwargs={"timeout_s": 1})
                for _ in range(4)]
    for q in quitters: q.start()
    for q in quitters: q.join()
    t, rc, _ = ask(a.build, v4, control)
    print(f"[2] control right after 4 abandoned 60 KB requests: {t:.2f} s (alone {solo:.2f} s), exit {rc}")
    # 7: another caller ([::1]) has a backlog of four big documents; the control comes from 127.0.0.1.
    backlog = [threading.Thread(target=ask, args=(a.build, v6, big)) for _ in range(4)]
    for b in backlog: b.start()
    time.sleep(1.0)
    t, rc, _ = ask(a.build, v4, control)
    print(f"[7] control behind another caller's backlog of 4 x 60 KB: {t:.2f} s (alone {solo:.2f} s, "
          f"one 60 KB request {big_solo:.1f} s), exit {rc}")
    for b in backlog: b.join()
    # 10: eight concurrent 5 MB documents (over the token limit).
    huge = write("/tmp/h_5mb.txt", (sample * 1000)[:5 << 20])
    results = []
    start = time.monotonic()
    senders = [threading.Thread(target=lambda: results.append(ask(a.build, v4, huge)))
               for _ in range(8)]
    for s in senders: s.start()
    for s in senders: s.join()
    print(f"[10] 8 concurrent 5 MB documents: all answered in {time.monotonic() - start:.2f} s, "
          f"slowest {max(r[0] for r in results):.2f} s, exits {sorted(r[1] for r in results)}: "
          f"{results[0][2][:110]}")
    # 9: 24 idle connections to /metrics, then a scrape.
    idle = [socket.create_connection(("127.0.0.1", metrics_port)) for _ in range(24)]
    start = time.monotonic()
    urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=30).read()
    print(f"[9] scrape beside 24 idle connections: {1000 * (time.monotonic() - start):.1f} ms")
    for s in idle: s.close()
    # 4: SIGTERM with calls in flight, --drain_timeout_s=3.
    flight = [threading.Thread(target=ask, args=(a.build, v4, big)) for _ in range(4)]
    for f in flight: f.start()
    time.sleep(1.0)
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    code = proc.wait()
    print(f"[4] SIGTERM with 4 x 60 KB in flight, drain 3 s: exited in {time.monotonic() - start:.2f} s, "
          f"exit code {code}")
    for f in flight: f.join()


if __name__ == "__main__":
    main()
