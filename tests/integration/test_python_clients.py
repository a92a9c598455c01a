"""longqa-server seen from stacks nobody here wrote: Python grpcio (Answer, health, reflection)
and a real Prometheus server scraping /metrics. Runs a real server process on 127.0.0.1.

Run by CTest as: .venv/bin/python -m pytest tests/integration/test_python_clients.py
(env LONGQA_BUILD_DIR points at the CMake build folder)."""
import os
import subprocess
import sys
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from longqa_process import BUILD, query_prometheus, start_prometheus, start_server
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def stubs_module(tmp_path_factory):
    """Generates the Python stubs of qa.proto with grpcio-tools."""
    out = tmp_path_factory.mktemp("stubs")
    from grpc_tools import protoc
    rc = protoc.main(["protoc", f"-I{ROOT}/proto", f"--python_out={out}", f"--grpc_python_out={out}",
                      f"{ROOT}/proto/longqa/v1/qa.proto"])
    assert rc == 0
    sys.path.insert(0, str(out))
    from longqa.v1 import qa_pb2, qa_pb2_grpc
    return qa_pb2, qa_pb2_grpc


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    model = tmp_path_factory.mktemp("model")
    subprocess.run([f"{BUILD}/tools/longqa-random-model", f"--out={model}", "--hidden_size=32",
                    "--num_heads=2", "--intermediate_size=64", "--window_tokens=32",
                    "--stride_tokens=24", "--vocab_size=300"], check=True, capture_output=True)
    proc, grpc_port, metrics_port, _ = start_server(model)
    yield {"grpc": f"127.0.0.1:{grpc_port}", "metrics_port": metrics_port, "model": model}
    proc.terminate()
    assert proc.wait(timeout=60) == 0


def test_answer_health_and_reflection(server, stubs_module):
    qa_pb2, qa_pb2_grpc = stubs_module
    channel = grpc.insecure_channel(server["grpc"])
    text = "kalo mine ruso tize.\n\nvopo anel isor quabri kalo."
    request = qa_pb2.AnswerRequest(request_id="py-1", question="kalo ruso".encode(),
                                   document=qa_pb2.Document(text=text.encode()),
                                   options=qa_pb2.AnswerOptions(n_best=2, include_timing=True))
    response = qa_pb2_grpc.QuestionAnsweringStub(channel).Answer(request, timeout=30)
    assert response.request_id == "py-1"
    assert response.usage.document_tokens > 0
    assert response.timing.total_seconds > 0
    assert len(response.answer_type_probabilities) == 5
    if response.HasField("long_answer"):
        span = response.long_answer
        assert text.encode()[span.byte_begin:span.byte_end].decode() == span.text

    with pytest.raises(grpc.RpcError) as error:
        qa_pb2_grpc.QuestionAnsweringStub(channel).Answer(
            qa_pb2.AnswerRequest(question=b"q", document=qa_pb2.Document(text=b"\xff bad")), timeout=30)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    assert health.status == health_pb2.HealthCheckResponse.SERVING

    reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
    replies = reflection.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10)
    services = {s.name for reply in replies for s in reply.list_services_response.service}
    assert "longqa.v1.QuestionAnswering" in services
    assert "grpc.health.v1.Health" in services


def test_bearer_token_guards_every_qa_method_but_not_health_or_reflection(
        server, stubs_module, tmp_path):
    """With --auth_token_file, Answer, AnswerStream and GetModelInfo need `authorization: Bearer
    <token>` (refused without it and with a wrong one, UNAUTHENTICATED); health and reflection stay
    open: liveness and the public schema, which orchestrators and tools read without secrets."""
    qa_pb2, qa_pb2_grpc = stubs_module
    token_file = tmp_path / "token"
    token_file.write_text("py-s3cret\n")
    proc, port, _, _ = start_server(server["model"], f"--auth_token_file={token_file}")
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        stub = qa_pb2_grpc.QuestionAnsweringStub(channel)
        request = qa_pb2.AnswerRequest(question=b"kalo",
                                       document=qa_pb2.Document(text=b"kalo mine ruso"))
        calls = {
            "Answer": lambda md: stub.Answer(request, timeout=30, metadata=md),
            "AnswerStream": lambda md: list(stub.AnswerStream(iter([request]), timeout=30,
                                                              metadata=md)),
            "GetModelInfo": lambda md: stub.GetModelInfo(qa_pb2.GetModelInfoRequest(), timeout=30,
                                                         metadata=md),
        }
        for name, call in calls.items():
            for metadata in (None, [("authorization", "Bearer wrong")]):
                with pytest.raises(grpc.RpcError) as error:
                    call(metadata)
                assert error.value.code() == grpc.StatusCode.UNAUTHENTICATED, (name, metadata)
            assert call([("authorization", "Bearer py-s3cret")]), name
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(),
                                                           timeout=10)
        assert health.status == health_pb2.HealthCheckResponse.SERVING
        replies = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10)
        services = {s.name for reply in replies for s in reply.list_services_response.service}
        assert "longqa.v1.QuestionAnswering" in services
    finally:
        proc.terminate()
        assert proc.wait(timeout=60) == 0


def test_prometheus_scrapes_request_counts(server, stubs_module, tmp_path):
    qa_pb2, qa_pb2_grpc = stubs_module
    prom, port = start_prometheus(
        {"global": {"scrape_interval": "1s"},
         "scrape_configs": [{"job_name": "longqa", "static_configs": [
             {"targets": [f"127.0.0.1:{server['metrics_port']}"]}]}]},
        str(tmp_path))
    try:
        stub = qa_pb2_grpc.QuestionAnsweringStub(grpc.insecure_channel(server["grpc"]))
        sent = 7
        for i in range(sent):
            stub.Answer(qa_pb2.AnswerRequest(question=b"kalo", document=qa_pb2.Document(
                text=f"paragraph {i} kalo mine".encode())), timeout=30)
        value, deadline = 0.0, time.time() + 90
        while time.time() < deadline:
            try:
                result = query_prometheus(port, "sum(longqa_requests_total)")
                if result:
                    value = float(result[0]["value"][1])
                    if value >= sent:
                        break
            except OSError:
                pass  # prometheus still starting
            time.sleep(1)
        assert value >= sent, f"prometheus saw {value} requests, sent {sent}"
    finally:
        prom.terminate()
        prom.wait(timeout=30)
