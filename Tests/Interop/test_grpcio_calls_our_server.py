"""grpcio (a real gRPC implementation) calling our server."""

import signal
import threading
import time

import grpc
import pytest


def channel(server):
    return grpc.insecure_channel(server.address)


def test_unary_success_with_metadata(echo_server, protos):
    echo_pb2, echo_pb2_grpc, _, _ = protos
    stub = echo_pb2_grpc.EchoStub(channel(echo_server))
    response, call = stub.Get.with_call(
        echo_pb2.EchoRequest(text="hello", payload=b"\x00\x01" * 1000),
        metadata=[("x-echo", "meta"), ("x-echo-bin", b"\x00\xff\x10")],
        timeout=10,
    )
    assert response.text == "hello"
    assert response.payload == b"\x00\x01" * 1000
    assert response.echoed_metadata == "meta"
    assert response.echoed_binary_metadata == b"\x00\xff\x10"
    assert call.code() == grpc.StatusCode.OK


def test_error_status_with_message(echo_server, protos):
    echo_pb2, echo_pb2_grpc, _, _ = protos
    stub = echo_pb2_grpc.EchoStub(channel(echo_server))
    with pytest.raises(grpc.RpcError) as failure:
        stub.Get(echo_pb2.EchoRequest(status_code=9, status_message="precondition: 50% ünïcode\n"), timeout=10)
    assert failure.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert failure.value.details() == "precondition: 50% ünïcode\n"


def test_deadline_exceeded(echo_server, protos):
    echo_pb2, echo_pb2_grpc, _, _ = protos
    stub = echo_pb2_grpc.EchoStub(channel(echo_server))
    started = time.time()
    with pytest.raises(grpc.RpcError) as failure:
        stub.Get(echo_pb2.EchoRequest(delay_ms=3000), timeout=0.2)
    assert failure.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert time.time() - started < 2


def test_oversized_message_rejected(echo_server, protos):
    echo_pb2, echo_pb2_grpc, _, _ = protos
    stub = echo_pb2_grpc.EchoStub(channel(echo_server))
    with pytest.raises(grpc.RpcError) as failure:
        stub.Get(echo_pb2.EchoRequest(payload=b"x" * (4 * 1024 * 1024 + 10)), timeout=20)
    assert failure.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    # The connection stays usable.
    assert stub.Get(echo_pb2.EchoRequest(text="after"), timeout=10).text == "after"


def test_unknown_method_is_unimplemented(echo_server):
    call = channel(echo_server).unary_unary("/echo.v1.Echo/Missing")
    with pytest.raises(grpc.RpcError) as failure:
        call(b"", timeout=10)
    assert failure.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_server_streaming(echo_server, protos):
    echo_pb2, echo_pb2_grpc, _, _ = protos
    stub = echo_pb2_grpc.EchoStub(channel(echo_server))
    texts = [response.text for response in stub.Expand(echo_pb2.EchoRequest(text="n", count=5), timeout=10)]
    assert texts == ["n 0", "n 1", "n 2", "n 3", "n 4"]


def test_health_check(echo_server, protos):
    _, _, health_pb2, health_pb2_grpc = protos
    stub = health_pb2_grpc.HealthStub(channel(echo_server))
    assert stub.Check(health_pb2.HealthCheckRequest(), timeout=10).status == health_pb2.HealthCheckResponse.SERVING
    with pytest.raises(grpc.RpcError) as failure:
        stub.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=10)
    assert failure.value.code() == grpc.StatusCode.NOT_FOUND


def test_health_watch_reports_not_serving_on_sigterm(server_factory, protos):
    _, _, health_pb2, health_pb2_grpc = protos
    server = server_factory()
    stub = health_pb2_grpc.HealthStub(channel(server))
    updates = stub.Watch(health_pb2.HealthCheckRequest(), timeout=20)
    assert next(updates).status == health_pb2.HealthCheckResponse.SERVING
    server.process.send_signal(signal.SIGTERM)
    assert next(updates).status == health_pb2.HealthCheckResponse.NOT_SERVING
    assert server.process.wait(timeout=20) == 0


def test_sigterm_completes_calls_in_flight(server_factory, protos):
    echo_pb2, echo_pb2_grpc, _, _ = protos
    server = server_factory()
    stub = echo_pb2_grpc.EchoStub(channel(server))
    assert stub.Get(echo_pb2.EchoRequest(text="warm"), timeout=10).text == "warm"
    futures = [stub.Get.future(echo_pb2.EchoRequest(text=f"slow{i}", delay_ms=1000), timeout=20) for i in range(20)]
    time.sleep(0.3)
    server.process.send_signal(signal.SIGTERM)
    assert [future.result().text for future in futures] == [f"slow{i}" for i in range(20)]
    assert server.process.wait(timeout=20) == 0


def test_mutual_tls(server_factory, protos, certificates):
    echo_pb2, echo_pb2_grpc, _, _ = protos
    server = server_factory(
        {
            "GRPC_ECHO_TLS_CERT": str(certificates / "server.pem"),
            "GRPC_ECHO_TLS_KEY": str(certificates / "server.key"),
            "GRPC_ECHO_TLS_CA": str(certificates / "ca.pem"),
        }
    )
    read = lambda name: (certificates / name).read_bytes()  # noqa: E731
    credentials = grpc.ssl_channel_credentials(read("ca.pem"), read("client.key"), read("client.pem"))
    stub = echo_pb2_grpc.EchoStub(grpc.secure_channel(server.address, credentials))
    assert stub.Get(echo_pb2.EchoRequest(text="mtls"), timeout=10).text == "mtls"

    anonymous = grpc.ssl_channel_credentials(read("ca.pem"))
    stub = echo_pb2_grpc.EchoStub(grpc.secure_channel(server.address, anonymous))
    with pytest.raises(grpc.RpcError) as failure:
        stub.Get(echo_pb2.EchoRequest(text="no client cert"), timeout=5)
    assert failure.value.code() == grpc.StatusCode.UNAVAILABLE
