"""The HTTP/JSON API (server/http_api.h): docs/http-api.yaml is a valid OpenAPI description; the
README's curl example, run as written against a server of models/demo, answers what `longqa ask`
answers for the same question; every response and error body matches the description's schemas.

Run by CTest as: .venv/bin/python -m pytest tests/integration/test_http_api.py
"""
import base64
import json
import os
import re
import subprocess
import urllib.error
import urllib.request

import pytest
import yaml
from openapi_schema_validator import OAS30Validator
from openapi_spec_validator import validate as validate_spec

from longqa_process import BUILD, start_server

SOURCE = os.path.join(os.path.dirname(__file__), "..", "..")
CLI = os.path.join(BUILD, "client", "longqa")
SPEC = yaml.safe_load(open(os.path.join(SOURCE, "docs", "http-api.yaml")))


def check_schema(instance, name):
    """Validates against components/schemas/<name> (refs resolved within the spec)."""
    schema = {"$ref": f"#/components/schemas/{name}", "components": SPEC["components"]}
    OAS30Validator(schema).validate(instance)


def readme_curl_example():
    """The shell lines of the README block marked as tested here."""
    readme = open(os.path.join(SOURCE, "README.md")).read()
    block = re.search(r"<!-- tested by tests/integration/test_http_api.py -->\n```sh\n(.*?)```",
                      readme, re.S)
    assert block, "README.md lost its HTTP example"
    return block.group(1)


@pytest.fixture(scope="module")
def server():
    proc, grpc_port, _, log = start_server(os.path.join(SOURCE, "models", "demo"),
                                           "--http_listen=127.0.0.1:0")
    http_port = int(re.search(r"HTTP API on port (\d+)", log).group(1))
    yield grpc_port, http_port
    proc.kill()
    proc.wait()


def post(port, body, headers=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/answer", data=body,
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=120) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_the_description_is_valid_openapi():
    validate_spec(SPEC)


def test_readme_curl_example_answers_as_longqa_ask(server):
    grpc_port, http_port = server
    script = readme_curl_example()
    # The example starts its own server on 8080: here the fixture's server stands in for it.
    lines = [line for line in script.splitlines() if "longqa-server" not in line]
    command = "\n".join(lines).replace("localhost:8080", f"127.0.0.1:{http_port}")
    out = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=SOURCE, check=True,
                         capture_output=True, text=True).stdout
    over_http = json.loads(out)
    question = re.search(r'"([^"]+\?)"', command).group(1)
    asked = json.loads(subprocess.run(
        [CLI, "ask", f"--target=127.0.0.1:{grpc_port}", "--question", question,
         f"--file={os.path.join(SOURCE, 'models', 'demo', 'sample.txt')}", "--json"],
        check=True, capture_output=True, text=True).stdout)
    # The README pipes the answer through `jq .shortAnswers[0]`.
    assert over_http["text"] == asked["short_answers"][0]["text"] == "1971", (over_http, asked)
    assert int(over_http["byteBegin"]) == asked["short_answers"][0]["byte_begin"]
    assert int(over_http["byteEnd"]) == asked["short_answers"][0]["byte_end"]
    check_schema(over_http, "Span")


def test_responses_and_errors_match_the_description(server):
    _, http_port = server
    text = open(os.path.join(SOURCE, "models", "demo", "sample.txt"), "rb").read()
    body = json.dumps({"question": base64.b64encode(b"Where was Folun Iskor born?").decode(),
                       "document": {"text": base64.b64encode(text).decode()},
                       "options": {"nBest": 3, "includeTiming": True}}).encode()
    check_schema(json.loads(body), "AnswerRequest")
    status, answer = post(http_port, body)
    assert status == 200, answer
    check_schema(answer, "AnswerResponse")
    assert answer["shortAnswers"][0]["text"] == "Weslim", answer
    assert answer["timing"]["totalSeconds"] > 0
    status, error = post(http_port, b'{"question": 7}')
    assert status == 400, error
    check_schema(error, "Error")
    assert error["code"] == "INVALID_ARGUMENT" and error["grpc_code"] == 3
    with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/v1/model", timeout=30) as reply:
        info = json.loads(reply.read())
    check_schema(info, "ModelInfo")
    config = json.load(open(os.path.join(SOURCE, "models", "demo", "config.json")))
    assert info["name"] == "demo" and info["layerPlan"] == config["layers"], (info, config)
    assert info["qaFormat"] == "nq" and info["answerScore"] == "type", info
