"""HTTP/2 rapid reset against the gateway: streams of the passkey sign-in start that are opened and reset at once
must not write challenge rows. Runs the stack on a fresh database of DATABASE_URL's server."""

import socket
import subprocess
import sys
import time
from pathlib import Path

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Support" / "python"))

from passkey_stack import Stack  # noqa: E402

START_PATH = "/v1/passkeys/authentications"
CONNECTIONS = 10
STREAMS_PER_CONNECTION = 1000


class GatewayStack(Stack):
    """The real stack (Tests/Support/python/passkey_stack.py, mutual TLS between the processes) with the start
    limits off: only the reset handling stands between the flood and the database here."""

    def __init__(self):
        super().__init__("rapid_reset", environment={
            "PASSKEY_RATE_LIMIT_START_PER_ADDRESS": "0",
            "PASSKEY_RATE_LIMIT_START_GLOBAL": "0",
        })

    def alive(self) -> bool:
        return not self.exited()

    def challenge_rows(self) -> int:
        result = subprocess.run(
            ["psql", self.url, "-Atc", "SELECT count(*) FROM passkey_authentication_challenges"],
            check=True, capture_output=True, text=True)
        return int(result.stdout.strip())

    def settled_challenge_rows(self, quiet_seconds: float = 1.0, timeout: float = 30) -> int:
        """The row count once it has not changed for `quiet_seconds`."""
        deadline = time.monotonic() + timeout
        last, since = self.challenge_rows(), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.2)
            now = self.challenge_rows()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet_seconds:
                return now
        return last


@pytest.fixture
def gateway_stack():
    stack = GatewayStack().start()
    yield stack
    stack.stop()


def request_headers(stack):
    return [
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", f"127.0.0.1:{stack.gateway_port}"),
        (":path", START_PATH),
        ("content-type", "application/json"),
    ]


def connect(stack):
    sock = socket.create_connection(("127.0.0.1", stack.gateway_port), timeout=10)
    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    connection.initiate_connection()
    sock.sendall(connection.data_to_send())
    return sock, connection


def complete_starts(stack, count, group=50):
    """`count` sign-in starts on one connection, `group` at a time (the gateway allows 128 concurrent streams),
    each answered; returns their statuses."""
    sock, connection = connect(stack)
    statuses = []
    for first in range(0, count, group):
        stream_ids = []
        for _ in range(min(group, count - first)):
            stream_id = connection.get_next_available_stream_id()
            connection.send_headers(stream_id, request_headers(stack))
            connection.send_data(stream_id, b"{}", end_stream=True)
            stream_ids.append(stream_id)
        sock.sendall(connection.data_to_send())
        statuses += wait_for_streams(sock, connection, stream_ids)
    sock.close()
    return statuses


def wait_for_streams(sock, connection, stream_ids, timeout=30):
    """Reads until every stream of `stream_ids` has ended; returns their `:status` values in that order."""
    statuses = {}
    pending = set(stream_ids)
    deadline = time.monotonic() + timeout
    while pending:
        assert time.monotonic() < deadline, f"{len(pending)} streams were never answered"
        data = sock.recv(1 << 20)
        assert data, "the gateway closed the connection"
        for event in connection.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                statuses[event.stream_id] = dict(event.headers)[":status"]
            elif isinstance(event, h2.events.DataReceived):
                connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                pending.discard(event.stream_id)
        outgoing = connection.data_to_send()
        if outgoing:
            sock.sendall(outgoing)
    return [statuses.get(stream_id) for stream_id in stream_ids]


def open_and_reset(stack, streams):
    """Opens `streams` complete sign-in starts on one connection, each reset right after its last frame; returns
    how many were sent before the server dropped the connection (if it did)."""
    sock, connection = connect(stack)
    sent = 0
    try:
        for _ in range(streams):
            stream_id = connection.get_next_available_stream_id()
            connection.send_headers(stream_id, request_headers(stack))
            connection.send_data(stream_id, b"{}", end_stream=True)
            connection.reset_stream(stream_id, error_code=8)  # CANCEL
            sent += 1
            if sent % 100 == 0:
                sock.sendall(connection.data_to_send())
        sock.sendall(connection.data_to_send())
        # Drain what the server says (window updates, a GOAWAY once the reset budget is spent) until it is quiet.
        sock.settimeout(1.0)
        while True:
            data = sock.recv(1 << 20)
            if not data:
                break
            connection.receive_data(data)
    except (OSError, socket.timeout, h2.exceptions.ProtocolError):
        pass
    finally:
        sock.close()
    return sent


def test_reset_streams_of_the_sign_in_start_write_almost_no_rows(gateway_stack):
    # Streams that are not reset each write their row: what the flood below would do without the reset handling.
    control = complete_starts(gateway_stack, 200)
    assert control == ["200"] * 200
    assert gateway_stack.settled_challenge_rows() == 200

    sent = sum(open_and_reset(gateway_stack, STREAMS_PER_CONNECTION) for _ in range(CONNECTIONS))
    assert sent >= CONNECTIONS * STREAMS_PER_CONNECTION * 0.9, f"only {sent} streams were sent"
    written = gateway_stack.settled_challenge_rows() - 200
    print(f"streams_opened_and_reset={sent} challenge_rows_written={written}")
    assert written <= sent * 0.05, f"{written} of {sent} reset streams still wrote a challenge row"

    # The gateway still serves, on a new connection.
    assert gateway_stack.alive()
    assert complete_starts(gateway_stack, 3) == ["200"] * 3
    assert gateway_stack.settled_challenge_rows() == 200 + written + 3
