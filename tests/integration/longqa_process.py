"""The processes Python tests start: longqa-server on free ports, returning once it says where it
listens (its log so far kept for failure messages), and Debian's Prometheus with a given config."""
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import yaml

BUILD = os.environ.get("LONGQA_BUILD_DIR",
                       os.path.join(os.path.dirname(__file__), "..", "..", "build"))


def start_server(model_dir, *extra_flags, timeout_s=300):
    """Returns (process, grpc_port, metrics_port, log); asserts the server started. The limit is
    generous: on a CPU without bf16, models/demo serves int8 and calibrates it at load (~90 s
    on 2 AVX2 cores beside another test's server, more than the 120 s once allowed)."""
    proc = subprocess.Popen([os.path.join(BUILD, "server", "longqa-server"),
                             f"--model_dir={model_dir}", "--listen=127.0.0.1:0",
                             "--metrics_listen=127.0.0.1:0", "--threads=2", *extra_flags],
                            stderr=subprocess.PIPE, text=True)
    deadline, log = time.time() + timeout_s, ""
    while time.time() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        log += line
        m = re.search(r"on port (\d+), metrics on port (\d+)", line)
        if m:
            return proc, int(m.group(1)), int(m.group(2)), log
    proc.kill()
    raise AssertionError(f"server did not start: {log}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_prometheus(config, workdir):
    """Debian's prometheus with `config` (a prometheus.yml as a dict), its data under `workdir`.
    Returns (process, port of its HTTP API)."""
    assert shutil.which("prometheus"), "Debian's prometheus is missing: run deploy/install-deps.sh"
    path = os.path.join(workdir, "prometheus.yml")
    with open(path, "w") as f:
        yaml.safe_dump(config, f)
    port = free_port()
    proc = subprocess.Popen(["prometheus", f"--config.file={path}",
                             f"--storage.tsdb.path={os.path.join(workdir, 'data')}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, port


def query_prometheus(port, expr):
    """The result list of an instant query (OSError while Prometheus is still starting)."""
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    reply = json.load(urllib.request.urlopen(url, timeout=10))
    assert reply["status"] == "success", reply
    return reply["data"]["result"]
