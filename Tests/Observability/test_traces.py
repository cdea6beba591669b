"""Traces across the real stack: an OTLP/HTTP receiver built on opentelemetry-proto takes what the gateway and the
three services export, and one passkey sign-in's spans must form the tree gateway → challenge-service → SQL and
gateway → verification-service → SQL, continuing the caller's traceparent. Also: a trace started by the gateway
when the caller sent none or a malformed one, the trace ID on the services' log lines, and a receiver that is down
costing dropped spans, never a sign-in."""

import http.server
import pathlib
import sys
import tempfile
import threading
import time
import urllib.request
import uuid

import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

TESTS = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "Support" / "python"))

from openssl_authenticator import Authenticator  # noqa: E402
from passkey_stack import Stack, free_port  # noqa: E402
from webauthn_encoding import b64url  # noqa: E402

SERVICES = ("gateway", "challenge-service", "verification-service", "session-service")


class Receiver:
    """OTLP/HTTP on loopback: every ExportTraceServiceRequest parsed, its spans kept with their service's name."""

    def __init__(self):
        self.spans = []
        self.requests = 0
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = trace_service_pb2.ExportTraceServiceRequest()
                request.ParseFromString(body)
                with receiver.lock:
                    receiver.requests += 1
                    for resource_spans in request.resource_spans:
                        service = next(a.value.string_value for a in resource_spans.resource.attributes
                                       if a.key == "service.name")
                        for scope_spans in resource_spans.scope_spans:
                            receiver.spans.extend((service, span) for span in scope_spans.spans)
                answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.port = free_port()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def trace(self, trace_id_hex, count, timeout=15):
        """The spans of one trace, once at least `count` have arrived."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                found = [(service, span) for service, span in self.spans if span.trace_id.hex() == trace_id_hex]
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.1)


@pytest.fixture(scope="module")
def traced():
    receiver = Receiver()
    metrics_ports = {name: free_port() for name in SERVICES if name != "gateway"}
    stack = Stack(
        prefix="traces",
        # The tests call as a trusted proxy would (the gateway takes a traceparent's sampling decision as given only
        # from one; GatewayTests.TransportHeaderTests covers a caller that is not).
        environment={"PASSKEY_TRUSTED_PROXIES": "127.0.0.1",
                     "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.port}",
                     "OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test"},
        per_process={name: {"METRICS_LISTEN": f"127.0.0.1:{port}"} for name, port in metrics_ports.items()})
    stack.start()
    keys = tempfile.mkdtemp(prefix="passkey-traces-keys-")
    try:
        yield stack, receiver, keys, metrics_ports
    finally:
        stack.stop()
        receiver.stop()


def create_passkey_account(stack, keys):
    authenticator = Authenticator(keys)
    start = stack.request("POST", "/v1/passkeys/account-registrations",
                          {"email": f"traced-{uuid.uuid4().hex[:12]}@example.com", "displayName": "Ada"})
    assert start.status == 200, start.body
    body = dict(authenticator.registration(start.json(), stack.origin), registrationID=start.json()["registrationID"])
    finish = stack.request("POST", "/v1/passkeys/account-registrations/finish", body)
    assert finish.status == 201, finish.body
    return authenticator


def sign_in(stack, authenticator, headers):
    start = stack.request("POST", "/v1/passkeys/authentications", {}, headers=headers)
    assert start.status == 200, start.body
    finish = stack.request("POST", "/v1/passkeys/authentications/finish",
                           authenticator.assertion(start.json(), stack.origin), headers=headers)
    assert finish.status == 200, finish.body
    return start, finish


def children(spans, parent):
    return [(service, span) for service, span in spans if span.parent_span_id == parent.span_id]


def one(spans, service, name):
    matches = [span for s, span in spans if s == service and span.name == name]
    assert len(matches) == 1, f"{service} {name}: {[(s, span.name) for s, span in spans]}"
    return matches[0]


def test_one_sign_in_is_one_tree_across_the_services(traced):
    stack, receiver, keys, _ = traced
    authenticator = create_passkey_account(stack, keys)
    trace_id = uuid.uuid4().hex
    caller_span = "00f067aa0ba902b7"
    sign_in(stack, authenticator, {"traceparent": f"00-{trace_id}-{caller_span}-01"})

    # Two gateway server spans, two client spans, two service spans, and at least one statement under each.
    spans = receiver.trace(trace_id, 8)
    begin = one(spans, "gateway", "POST /v1/passkeys/authentications")
    finish = one(spans, "gateway", "POST /v1/passkeys/authentications/finish")
    for root in (begin, finish):
        assert root.parent_span_id.hex() == caller_span
        assert root.kind == root.SPAN_KIND_SERVER
        attributes = {a.key: a.value for a in root.attributes}
        assert attributes["http.response.status_code"].int_value == 200
        assert attributes["http.route"].string_value == root.name.split(" ", 1)[1]

    for root, service, method in ((begin, "challenge-service", "passkey.v1.ChallengeService/BeginAuthentication"),
                                  (finish, "verification-service",
                                   "passkey.v1.VerificationService/FinishAuthentication")):
        client = one(children(spans, root), "gateway", method)
        assert client.kind == client.SPAN_KIND_CLIENT
        server = one(children(spans, client), service, method)
        assert server.kind == server.SPAN_KIND_SERVER
        statements = [span for s, span in children(spans, server) if s == service]
        assert statements, f"no database span under {service}'s {method}"
        for statement in statements:
            attributes = {a.key: a.value.string_value for a in statement.attributes}
            assert attributes["db.system"] == "postgresql"
            assert statement.start_time_unix_nano >= server.start_time_unix_nano
            assert statement.end_time_unix_nano <= server.end_time_unix_nano
        assert server.start_time_unix_nano >= client.start_time_unix_nano
        assert server.end_time_unix_nano <= client.end_time_unix_nano

    # The finish's statement carries its SQL text, never a bound value (the credential ID is a bind).
    texts = [a.value.string_value for _, span in spans for a in span.attributes if a.key == "db.query.text"]
    assert texts and any("$1" in text for text in texts)
    assert not any(b64url(authenticator.credential_id) in text for text in texts)

    # The resource names the service and the configured attributes.
    with receiver.lock:
        assert {service for service, _ in receiver.spans} >= {"gateway", "challenge-service", "verification-service"}


def test_the_gateway_starts_a_trace_when_the_caller_sent_none_or_a_malformed_one(traced):
    stack, receiver, keys, _ = traced
    for headers in ({}, {"traceparent": "00-not-a-trace-01"}, {"traceparent": "x" * 10_000}):
        response = stack.request("POST", "/v1/passkeys/authentications", {}, headers=headers)
        assert response.status == 200, response.body
        traceresponse = response.headers["traceresponse"]
        _, trace_id, span_id, flags = traceresponse.split("-")
        assert flags == "01"
        spans = receiver.trace(trace_id, 4)
        root = one(spans, "gateway", "POST /v1/passkeys/authentications")
        assert root.span_id.hex() == span_id
        assert root.parent_span_id == b""


def test_log_lines_of_a_request_name_its_trace(traced):
    stack, receiver, keys, _ = traced
    # A passkey account's creation logs audit events in verification-service.
    trace_id = uuid.uuid4().hex
    authenticator = Authenticator(keys)
    headers = {"traceparent": f"00-{trace_id}-00f067aa0ba902b7-00"}
    start = stack.request("POST", "/v1/passkeys/account-registrations",
                          {"email": f"logged-{uuid.uuid4().hex[:12]}@example.com", "displayName": "Lin"},
                          headers=headers)
    assert start.status == 200, start.body
    body = dict(authenticator.registration(start.json(), stack.origin), registrationID=start.json()["registrationID"])
    finish = stack.request("POST", "/v1/passkeys/account-registrations/finish", body, headers=headers)
    assert finish.status == 201, finish.body
    log = (stack.logs / "verification-service.log").read_text()
    assert f"trace.id={trace_id}" in log, log[-3000:]
    # The caller said not to sample it: nothing of it was exported.
    time.sleep(0.5)
    assert receiver.trace(trace_id, 1, timeout=0.5) == []


def metric(port, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def test_a_receiver_that_is_down_costs_spans_not_sign_ins(traced):
    stack, receiver, keys, metrics_ports = traced
    authenticator = create_passkey_account(stack, keys)
    # Last in this module: the receiver stays down.
    receiver.stop()
    for _ in range(20):
        sign_in(stack, authenticator, {})
    deadline = time.monotonic() + 15
    port = metrics_ports["verification-service"]
    while metric(port, 'trace_spans_dropped_total{service="verification-service",reason="export_failed"}') == 0:
        assert time.monotonic() < deadline, "no export failure was counted"
        time.sleep(0.2)
