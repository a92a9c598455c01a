"""Starting longqa-server from Python tests: on free ports, returning once it says where it
listens (its log so far kept for failure messages)."""
import os
import re
import subprocess
import time

BUILD = os.environ.get("LONGQA_BUILD_DIR",
                       os.path.join(os.path.dirname(__file__), "..", "..", "build"))


def start_server(model_dir, *extra_flags, timeout_s=120):
    """Returns (process, grpc_port, metrics_port, log); asserts the server started."""
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
