"""Every PromQL expression that deploy/ ships, evaluated against a real Prometheus (Debian's) that
scrapes a real longqa server under a short load: each must return at least one series.

Expressions: every target of deploy/grafana/dashboards/longqa.json (Grafana's $job and
$__rate_interval replaced), every recording rule of deploy/prometheus/rules.yml (its expression and
the recorded series) and every alert of alerts.yml without its final threshold comparison (an alert
is quiet on a healthy server by design; the quantity it watches must still exist).

Used by tests/deploy/test_observability.py (a host server) and tests/deploy/container_test.sh (the
container), or by hand:
  python tests/deploy/promql_check.py --metrics 127.0.0.1:9464 --grpc 127.0.0.1:50051 \
      --cli build/client/longqa
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from longqa_process import query_prometheus as query  # noqa: E402
from longqa_process import start_prometheus as start_prometheus_with  # noqa: E402

PROMETHEUS_DIR = os.path.join(ROOT, "deploy", "prometheus")
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "dashboards", "longqa.json")
THRESHOLD = re.compile(r"\s*(==|!=|>=|<=|>|<)\s*[-+0-9.eE]+\s*$")


def dashboard_expressions():
    """(where, expr) of every dashboard target, with Grafana's variables made concrete."""
    dash = json.load(open(DASHBOARD))
    out = []
    for panel in dash["panels"]:
        for target in panel["targets"]:
            expr = target["expr"].replace("$__rate_interval", "1m").replace('"$job"', '".+"')
            assert "$" not in expr, f"unhandled Grafana variable in {expr}"
            out.append((f"dashboard panel '{panel['title']}' {target['refId']}", expr))
    return out


def rule_expressions():
    """(where, expr) of every recording rule (expression and recorded name) and alert."""
    out = []
    for name in ("rules.yml", "alerts.yml"):
        for group in yaml.safe_load(open(os.path.join(PROMETHEUS_DIR, name)))["groups"]:
            for rule in group["rules"]:
                expr = " ".join(rule["expr"].split())
                if "record" in rule:
                    out.append((f"recording rule {rule['record']}", expr))
                    out.append((f"recorded series {rule['record']}", rule["record"]))
                else:
                    watched = THRESHOLD.sub("", expr)
                    assert watched != expr, f"alert {rule['alert']}: no final threshold in {expr}"
                    out.append((f"alert {rule['alert']} (without its threshold)", watched))
    return out


def metric_names(expressions):
    """The longqa_* metric names the expressions read (recorded series excluded)."""
    names = set()
    for _, expr in expressions:
        for name in re.findall(r"(?<![:\w])longqa_[a-z_]+(?![:\w])", expr):
            names.add(re.sub(r"_(bucket|sum|count)$", "", name))
    return names


def start_prometheus(metrics_target, workdir):
    """Debian's prometheus with deploy/prometheus/prometheus.yml, retargeted and sped up."""
    config = yaml.safe_load(open(os.path.join(PROMETHEUS_DIR, "prometheus.yml")))
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config["rule_files"] = [os.path.join(PROMETHEUS_DIR, f) for f in config["rule_files"]]
    (job,) = config["scrape_configs"]
    assert job["job_name"] == "longqa"
    job["static_configs"] = [{"targets": [metrics_target]}]
    return start_prometheus_with(config, workdir)


def load(cli, grpc_target, seconds):
    """A short mixed load: concurrent 300-word questions, then one unanswerable-looking one."""
    subprocess.run([cli, "bench", f"--target={grpc_target}", "--concurrency=2",
                    f"--duration_s={seconds}", "--doc_words=300"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([cli, "info", f"--target={grpc_target}"], check=True,
                   stdout=subprocess.DEVNULL)


def check(metrics_target, grpc_target, cli, load_seconds=15, timeout_s=180):
    """Returns the list of (where, expr) that returned no series (empty: all good)."""
    expressions = dashboard_expressions() + rule_expressions()
    with tempfile.TemporaryDirectory() as workdir:
        prom, port = start_prometheus(metrics_target, workdir)
        try:
            deadline = time.time() + 60
            while True:  # the target is up before the load starts
                try:
                    if any(r["value"][1] == "1" for r in query(port, 'up{job="longqa"}')):
                        break
                except OSError:
                    pass
                assert time.time() < deadline, f"prometheus never scraped {metrics_target}"
                time.sleep(1)
            load(cli, grpc_target, load_seconds)
            deadline, empty = time.time() + timeout_s, expressions
            while True:
                empty = [(w, e) for w, e in empty if not query(port, e)]
                if not empty or time.time() > deadline:
                    return empty
                time.sleep(2)
        finally:
            prom.terminate()
            prom.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--metrics", required=True, help="host:port of longqa's /metrics")
    parser.add_argument("--grpc", required=True, help="host:port of longqa's gRPC")
    parser.add_argument("--cli", required=True, help="path of the longqa CLI")
    args = parser.parse_args()
    n = len(dashboard_expressions() + rule_expressions())
    empty = check(args.metrics, args.grpc, args.cli)
    for where, expr in empty:
        print(f"NO SERIES: {where}: {expr}")
    print(f"promql_check: {n - len(empty)} of {n} expressions return series")
    raise SystemExit(1 if empty else 0)


if __name__ == "__main__":
    main()
