"""HTTP/2 edge cases against our server, driven with the h2 package over raw sockets."""

import socket
import struct
import time

import grpc
import h2.config
import h2.connection
import h2.events
import h2.exceptions
import pytest


def grpc_frame(message: bytes) -> bytes:
    return b"\x00" + struct.pack(">I", len(message)) + message


def request_headers(server, path="/echo.v1.Echo/Get", content_type="application/grpc"):
    return [
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", server.address),
        (":path", path),
        ("content-type", content_type),
        ("te", "trailers"),
    ]


def connect(server):
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    connection.initiate_connection()
    sock.sendall(connection.data_to_send())
    return sock, connection


def pump(sock, connection, until, timeout=30):
    """Reads events until `until(events_so_far)` is true."""
    collected = []
    deadline = time.time() + timeout
    while not until(collected):
        assert time.time() < deadline, "timed out waiting for the server"
        data = sock.recv(1 << 20)
        if not data:
            break
        events = connection.receive_data(data)
        for event in events:
            if isinstance(event, h2.events.DataReceived):
                connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        collected.extend(events)
        outgoing = connection.data_to_send()
        if outgoing:
            sock.sendall(outgoing)
    return collected


def assert_server_serves(server, protos):
    echo_pb2, echo_pb2_grpc, _, _ = protos
    stub = echo_pb2_grpc.EchoStub(grpc.insecure_channel(server.address))
    assert stub.Get(echo_pb2.EchoRequest(text="still here"), timeout=10).text == "still here"


def test_thousand_concurrent_streams_on_one_connection(echo_server, protos):
    echo_pb2, _, _, _ = protos
    sock, connection = connect(echo_server)
    pump(sock, connection, lambda events: any(isinstance(e, h2.events.RemoteSettingsChanged) for e in events))
    body = grpc_frame(echo_pb2.EchoRequest(text="c", delay_ms=300).SerializeToString())
    started = time.time()
    for index in range(1000):
        stream_id = connection.get_next_available_stream_id()
        connection.send_headers(stream_id, request_headers(echo_server))
        connection.send_data(stream_id, body, end_stream=True)
    sock.sendall(connection.data_to_send())
    ended = lambda events: sum(isinstance(e, h2.events.StreamEnded) for e in events) >= 1000  # noqa: E731
    events = pump(sock, connection, ended)
    trailers = [e for e in events if isinstance(e, h2.events.TrailersReceived)]
    assert len(trailers) == 1000
    assert all(dict(e.headers)["grpc-status"] == "0" for e in trailers)
    # Each call sleeps 300 ms: run one after another they would take 300 s.
    assert time.time() - started < 20
    sock.close()


def test_wrong_content_type_gets_415(echo_server):
    sock, connection = connect(echo_server)
    stream_id = connection.get_next_available_stream_id()
    connection.send_headers(stream_id, request_headers(echo_server, content_type="application/json"))
    connection.send_data(stream_id, b"{}", end_stream=True)
    sock.sendall(connection.data_to_send())
    events = pump(sock, connection, lambda events: any(isinstance(e, h2.events.ResponseReceived) for e in events))
    response = next(e for e in events if isinstance(e, h2.events.ResponseReceived))
    assert dict(response.headers)[":status"] == "415"
    sock.close()


def raw_frame(frame_type: int, flags: int, stream_id: int, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([frame_type, flags]) + struct.pack(">I", stream_id) + payload


def test_peer_that_stops_reading_does_not_grow_memory(echo_server, protos):
    import hpack

    echo_pb2, _, _, _ = protos
    body = grpc_frame(echo_pb2.EchoRequest(payload=b"p" * 60_000).SerializeToString())
    before = echo_server.rss_kib()
    # Raw frames: this peer never reads, so it relies on the window updates the server grants as it consumes.
    sock = socket.create_connection(("127.0.0.1", echo_server.port), timeout=10)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + raw_frame(4, 0, 0, b""))
    sock.settimeout(2.0)
    encoder = hpack.Encoder()
    sent = 0
    try:
        for index in range(1000):
            stream_id = 1 + 2 * index
            frames = raw_frame(1, 0x4, stream_id, encoder.encode(request_headers(echo_server)))
            for offset in range(0, len(body), 16384):
                chunk = body[offset : offset + 16384]
                frames += raw_frame(0, 0x1 if offset + 16384 >= len(body) else 0, stream_id, chunk)
            sock.sendall(frames)
            sent += len(body)
    except (socket.timeout, OSError):
        pass  # the server stopped reading from us: what we want
    time.sleep(1.0)
    grown_mib = (echo_server.rss_kib() - before) / 1024
    assert echo_server.alive()
    # Without a bound the server would hold every response (as many bytes as `sent`); it holds a few MiB.
    print(f"sent={sent} grown_mib={grown_mib:.1f}")
    assert sent > 8_000_000, "the server should have taken some requests before pushing back"
    assert grown_mib < 48, f"RSS grew by {grown_mib:.1f} MiB after {sent / 1e6:.1f} MB of requests"
    assert_server_serves(echo_server, protos)
    sock.close()


def test_rapid_reset_flood_does_not_take_the_server_down(echo_server, protos):
    echo_pb2, _, _, _ = protos
    body = grpc_frame(echo_pb2.EchoRequest(text="r", delay_ms=50).SerializeToString())
    for _ in range(3):
        sock, connection = connect(echo_server)
        dropped = False
        try:
            for _ in range(20_000):
                stream_id = connection.get_next_available_stream_id()
                connection.send_headers(stream_id, request_headers(echo_server))
                connection.send_data(stream_id, body)
                connection.reset_stream(stream_id)
                if stream_id % 200 == 1:
                    sock.sendall(connection.data_to_send())
            sock.sendall(connection.data_to_send())
        except (OSError, h2.exceptions.ProtocolError):
            dropped = True  # the server dropped the flooding connection mid-flood
        if not dropped:
            # The reset rate limit ends the connection: GOAWAY, then EOF.
            sock.settimeout(10)
            while not dropped:
                try:
                    data = sock.recv(65536)
                except socket.timeout:
                    break
                except OSError:
                    dropped = True
                    break
                if not data:
                    dropped = True
                elif any(isinstance(e, h2.events.ConnectionTerminated) for e in connection.receive_data(data)):
                    dropped = True
        sock.close()
        assert dropped, "the server kept a connection that reset 20,000 streams"
    assert echo_server.alive()
    assert_server_serves(echo_server, protos)


def test_garbage_preface_closes_only_that_connection(echo_server, protos):
    echo_pb2, echo_pb2_grpc, _, _ = protos
    stub = echo_pb2_grpc.EchoStub(grpc.insecure_channel(echo_server.address))
    assert stub.Get(echo_pb2.EchoRequest(text="before"), timeout=10).text == "before"
    garbage = socket.create_connection(("127.0.0.1", echo_server.port), timeout=10)
    garbage.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + bytes(range(256)) * 4)
    received = b""
    while True:
        chunk = garbage.recv(65536)
        if not chunk:
            break
        received += chunk
    garbage.close()
    # The same grpcio connection keeps working.
    assert stub.Get(echo_pb2.EchoRequest(text="after"), timeout=10).text == "after"
    assert echo_server.alive()
