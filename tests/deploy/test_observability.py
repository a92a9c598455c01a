"""The dashboard and the alert rules of deploy/ against a real longqa server (host build, demo
model) and a real Prometheus: every metric they read exists before the first request, and every
expression returns series after a short load (tests/deploy/promql_check.py)."""
import os
import sys
import urllib.request

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from longqa_process import BUILD, start_server  # noqa: E402
import promql_check  # noqa: E402

MODEL = os.path.join(promql_check.ROOT, "models", "demo")


@pytest.fixture(scope="module")
def server():
    proc, grpc_port, metrics_port, _ = start_server(MODEL)
    yield {"grpc": f"127.0.0.1:{grpc_port}", "metrics": f"127.0.0.1:{metrics_port}"}
    proc.terminate()
    proc.wait(timeout=60)


def exposition(metrics):
    return urllib.request.urlopen(f"http://{metrics}/metrics", timeout=10).read().decode()


def test_fresh_server_exposes_every_series_the_deploy_files_read(server):
    page = exposition(server["metrics"])  # before any request
    names = promql_check.metric_names(promql_check.dashboard_expressions() +
                                      promql_check.rule_expressions())
    assert len(names) >= 15, names
    missing = [n for n in sorted(names)
               if not any(line.startswith((n + "{", n + " ", n + "_bucket{", n + "_count"))
                          for line in page.splitlines())]
    assert not missing, f"absent from a fresh server's /metrics: {missing}"
    # Labelled counters start at 0 for every code and type the rules and panels select.
    for code in ("OK", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED", "UNAVAILABLE", "INTERNAL",
                 "UNKNOWN", "INVALID_ARGUMENT"):
        for transport in ("grpc", "http"):
            series = f'longqa_requests_total{{code="{code}",method="Answer",transport="{transport}"}}'
            assert f"{series} 0" in page, series
    for answer_type in ("no_answer", "yes", "no", "short", "long_only"):
        assert f'longqa_answers_total{{type="{answer_type}"}} 0' in page, answer_type
    assert "longqa_ready 1" in page
    assert "longqa_queue_limit_tokens 1048576" in page


def test_every_dashboard_and_rule_expression_returns_series(server):
    empty = promql_check.check(server["metrics"], server["grpc"],
                               os.path.join(BUILD, "client", "longqa"))
    assert not empty, "expressions without series:\n" + "\n".join(f"{w}: {e}" for w, e in empty)
