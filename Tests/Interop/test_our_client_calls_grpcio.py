"""Our Swift client (grpc-echo-client) calling a grpcio server that implements echo.v1.Echo."""

import subprocess
import time
from concurrent import futures

import grpc
import pytest

from conftest import binary


@pytest.fixture
def grpcio_server(protos):
    echo_pb2, echo_pb2_grpc, _, _ = protos

    class Echo(echo_pb2_grpc.EchoServicer):
        def Get(self, request, context):
            if request.delay_ms:
                time.sleep(request.delay_ms / 1000)
            if request.status_code:
                context.abort(grpc.StatusCode(_status(request.status_code)), request.status_message)
            metadata = dict(context.invocation_metadata())
            return echo_pb2.EchoResponse(
                text=request.text,
                payload=request.payload,
                echoed_metadata=metadata.get("x-echo", ""),
                echoed_binary_metadata=metadata.get("x-echo-bin", b""),
            )

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    echo_pb2_grpc.add_EchoServicer_to_server(Echo(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}"
    server.stop(grace=None)


def _status(code):
    for status in grpc.StatusCode:
        if status.value[0] == code:
            return status.value
    raise ValueError(code)


def run_client(*arguments):
    result = subprocess.run(
        [str(binary("grpc-echo-client")), *arguments], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.strip()


def test_unary_success_with_metadata(grpcio_server):
    assert run_client(grpcio_server, "get", "hello") == "status=0 text=hello metadata=from-swift binary=0.1.2.255"


def test_error_status_with_message(grpcio_server):
    assert run_client(grpcio_server, "fail", "7", "denied: ü 100%") == "status=7 message=denied: ü 100%"


def test_deadline_exceeded(grpcio_server):
    assert run_client(grpcio_server, "slow", "2000", "200").startswith("status=4 ")


def test_many_concurrent_calls(grpcio_server):
    assert run_client(grpcio_server, "many", "500") == "succeeded=500 total=500"


def test_retry_on_other_address_when_refused(grpcio_server):
    # 127.0.0.1:1 refuses connections; the call provably never reached a server, so it moves on.
    assert run_client(f"127.0.0.1:1,{grpcio_server}", "get", "x").startswith("status=0 text=x")
