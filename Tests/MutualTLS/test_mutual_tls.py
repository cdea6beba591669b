"""Every internal call is mutual TLS with a service identity, and each method answers only the callers its service
declares: grpcio (a real gRPC implementation with TLS credentials) as the peer, against the real executables."""
import re
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request

import grpc
import pytest

from conftest import BIN, serial_of
from passkey_stack import ROOT as REPOSITORY, free_port, wait_for_port

HEALTH_CHECK = "/grpc.health.v1.Health/Check"
SERVING = b"\x08\x01"
# One method of each service; all of them are the gateway's to call.
METHODS = {
    "challenge-service": "/passkey.v1.ChallengeService/BeginAuthentication",
    "verification-service": "/passkey.v1.VerificationService/ListCredentials",
    "session-service": "/passkey.v1.SessionService/ValidateSession",
}
SERVICE_NAMES = {"challenge-service": "ChallengeService", "verification-service": "VerificationService",
                 "session-service": "SessionService"}


def proto_methods(service_name):
    """Every rpc of `service_name` as the .proto files in Shared/Composition/Protos declare it, so a new method is covered."""
    methods, current = [], None
    for proto in sorted((REPOSITORY / "Shared" / "Composition" / "Protos" / "passkey" / "v1").glob("*.proto")):
        for line in proto.read_text().splitlines():
            found = re.match(r"\s*service\s+(\w+)", line)
            if found:
                current = found.group(1)
            found = re.match(r"\s*rpc\s+(\w+)\s*\(", line)
            if found and current == service_name:
                methods.append(found.group(1))
    return methods


ALL_METHODS = {service: proto_methods(name) for service, name in SERVICE_NAMES.items()}


def channel(stack, service, identity_dir=None, identity="gateway", trust_dir=None):
    """A grpcio channel to `service` trusting the stack's CA (or `trust_dir`'s), presenting `identity`'s certificate
    from `identity_dir` (none when identity_dir is False)."""
    root = ((trust_dir or stack.certificates) / "ca.pem").read_bytes()
    if identity_dir is False:
        credentials = grpc.ssl_channel_credentials(root)
    else:
        directory = identity_dir or stack.certificates
        credentials = grpc.ssl_channel_credentials(
            root, (directory / f"{identity}.key").read_bytes(), (directory / f"{identity}.pem").read_bytes())
    return grpc.secure_channel(
        f"127.0.0.1:{stack.ports[service]}", credentials, options=[("grpc.ssl_target_name_override", "localhost")])


def call(chan, path, request=b"", timeout=5):
    """(status code, details, response bytes) of one unary call."""
    code, details, response, _ = call_with_trailers(chan, path, request, timeout)
    return code, details, response


def call_with_trailers(chan, path, request=b"", timeout=5):
    """(status code, details, response bytes, trailing metadata as a dict) of one unary call."""
    try:
        response, state = chan.unary_unary(path).with_call(request, timeout=timeout)
        return grpc.StatusCode.OK, "", response, dict(state.trailing_metadata() or ())
    except grpc.RpcError as error:
        return error.code(), error.details(), None, dict(error.trailing_metadata() or ())


def metric(stack, service, name, **labels):
    """The value of one sample in a service's /metrics, 0 when absent."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{stack.metrics_ports[service]}/metrics", timeout=5).read().decode()
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        if all(f'{key}="{value}"' in line for key, value in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


@pytest.mark.parametrize("service", sorted(METHODS))
def test_the_gateway_identity_is_served(stack, service):
    code, details, _, trailers = call_with_trailers(channel(stack, service), METHODS[service])
    # The call ran: it succeeded, or the handler refused the empty request with a domain error (which carries the
    # error-code trailer); the caller policy's refusals carry none.
    assert code == grpc.StatusCode.OK or "error-code" in trailers, (code, details, trailers)
    if service == "challenge-service":
        assert code == grpc.StatusCode.OK


@pytest.mark.parametrize("service", sorted(METHODS))
def test_another_services_identity_is_permission_denied_on_every_method(stack, service):
    # Any other service's certificate: valid, from the right CA, but not allowed to call.
    other = "session-service" if service != "session-service" else "verification-service"
    before = metric(stack, service, "grpc_server_refused_calls_total", code="PERMISSION_DENIED")
    chan = channel(stack, service, identity=other)
    for method in ALL_METHODS[service]:
        code, details, _, trailers = call_with_trailers(chan, f"/passkey.v1.{SERVICE_NAMES[service]}/{method}")
        assert code == grpc.StatusCode.PERMISSION_DENIED, (method, code, details)
        assert "error-code" not in trailers
        assert f"spiffe://passkey.internal/{other}" in details
    assert metric(stack, service, "grpc_server_refused_calls_total", code="PERMISSION_DENIED") == before + len(
        ALL_METHODS[service])
    # Health stays open to it.
    assert call(chan, HEALTH_CHECK) == (grpc.StatusCode.OK, "", SERVING)


def test_no_certificate_is_unauthenticated(stack):
    chan = channel(stack, "challenge-service", identity_dir=False)
    before = metric(stack, "challenge-service", "grpc_server_refused_calls_total", reason="no_certificate")
    code, details, _ = call(chan, METHODS["challenge-service"])
    assert code == grpc.StatusCode.UNAUTHENTICATED
    assert "certificate is required" in details
    assert metric(stack, "challenge-service", "grpc_server_refused_calls_total", reason="no_certificate") == before + 1
    assert call(chan, HEALTH_CHECK)[0] == grpc.StatusCode.OK


def test_a_certificate_from_another_ca_is_unauthenticated(stack, foreign):
    chan = channel(stack, "session-service", identity_dir=foreign)
    code, details, _ = call(chan, METHODS["session-service"])
    assert code == grpc.StatusCode.UNAUTHENTICATED
    assert "not trusted" in details and "verify" in details, details


def test_an_expired_certificate_is_unauthenticated(stack, expired):
    chan = channel(stack, "verification-service", identity_dir=expired)
    code, details, _ = call(chan, METHODS["verification-service"])
    assert code == grpc.StatusCode.UNAUTHENTICATED
    assert "expired" in details, details


def test_refusals_are_logged_with_the_peers_identity(stack, foreign):
    call(channel(stack, "challenge-service", identity="verification-service"), METHODS["challenge-service"])
    call(channel(stack, "challenge-service", identity_dir=foreign), METHODS["challenge-service"])
    time.sleep(0.2)
    log = (stack.logs / "challenge-service.log").read_text()
    assert re.search(r"event=grpc\.call_refused .*identity=spiffe://passkey\.internal/verification-service "
                     r"reason=not_allowed", log), log[-3000:]
    assert re.search(r"event=grpc\.call_refused .*identity=untrusted:spiffe://passkey\.internal/gateway "
                     r"reason=untrusted_certificate", log), log[-3000:]


def test_the_gateway_refuses_a_server_with_another_identity(stack, tmp_path):
    """A gateway whose challenge-service address reaches session-service (a wrong address, a wrong DNS answer):
    session-service's certificate is valid and from the right CA, but not challenge-service's identity, so the
    gateway closes the connection before sending anything and the app gets 503."""
    port = free_port()
    env = stack.environment("gateway")
    env["GATEWAY_LISTEN"] = f"127.0.0.1:{port}"
    env["CHALLENGE_SERVICE_ADDRESSES"] = f"127.0.0.1:{stack.ports['session-service']}"
    log_path = tmp_path / "confused-gateway.log"
    before = metric(stack, "session-service", "grpc_server_refused_calls_total")
    with open(log_path, "wb") as log:
        gateway = subprocess.Popen([str(BIN / "gateway")], env=env, stdout=log, stderr=log)
    try:
        wait_for_port(port)
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/passkeys/authentications", data=b"{}",
                                         method="POST", headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(request, timeout=10)
            status = 200
        except urllib.error.HTTPError as error:
            status = error.code
        assert status == 503
    finally:
        gateway.terminate()
        gateway.wait(timeout=15)
    text = log_path.read_text()
    assert re.search(r"event=client\.tls_failed .*is not the expected service", text), text[-3000:]
    # Nothing reached session-service's caller policy: the connection ended in the handshake.
    assert metric(stack, "session-service", "grpc_server_refused_calls_total") == before


def test_a_plaintext_client_gets_nothing(stack):
    chan = grpc.insecure_channel(f"127.0.0.1:{stack.ports['challenge-service']}")
    code, _, _ = call(chan, HEALTH_CHECK, timeout=2)
    assert code == grpc.StatusCode.UNAVAILABLE


def test_tls_below_1_3_is_refused(stack):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(stack.certificates / "ca.pem")
    context.load_cert_chain(stack.certificates / "gateway.pem", stack.certificates / "gateway.key")
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["h2"])
    with socket.create_connection(("127.0.0.1", stack.ports["challenge-service"]), timeout=5) as raw:
        with pytest.raises(ssl.SSLError):
            with context.wrap_socket(raw, server_hostname="localhost"):
                pass


@pytest.mark.parametrize("service", sorted(METHODS))
def test_the_plaintext_health_port_serves_health_and_nothing_else(stack, service):
    chan = grpc.insecure_channel(f"127.0.0.1:{stack.health_ports[service]}")
    assert call(chan, HEALTH_CHECK) == (grpc.StatusCode.OK, "", SERVING)
    assert call(chan, HEALTH_CHECK, b"\x0a\x08liveness") == (grpc.StatusCode.OK, "", SERVING)
    code, _, _ = call(chan, METHODS[service])
    assert code == grpc.StatusCode.UNIMPLEMENTED


def test_garbage_instead_of_a_client_hello_closes_only_that_connection(stack):
    chan = channel(stack, "challenge-service")
    assert call(chan, METHODS["challenge-service"])[0] == grpc.StatusCode.OK
    for garbage in (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", bytes(range(256)) * 64):
        with socket.create_connection(("127.0.0.1", stack.ports["challenge-service"]), timeout=5) as raw:
            raw.sendall(garbage)
            raw.settimeout(5)
            received = b""
            try:
                while chunk := raw.recv(4096):
                    received += chunk
            except (ConnectionResetError, socket.timeout):
                pass
            # Closed by the server (at most a TLS alert came back), never left hanging.
            assert len(received) < 64, received
        # The connection that was already open still serves calls.
        assert call(chan, METHODS["challenge-service"])[0] == grpc.StatusCode.OK
    assert stack.exited() == {}


def test_the_gateway_signs_in_over_mutual_tls(stack):
    """The whole path: the gateway's calls carry its identity and are allowed."""
    created = stack.request(
        "POST", "/v1/accounts/password",
        {"email": "mtls@example.com", "password": "correct horse battery", "displayName": "M"})
    assert created.status == 201, created.body
    signed_in = stack.request(
        "POST", "/v1/sessions/password", {"email": "mtls@example.com", "password": "correct horse battery"})
    assert signed_in.status == 200, signed_in.body
    token = signed_in.json()["accessToken"]
    assert stack.request("GET", "/v1/account", token=token).status == 200
    assert stack.request("POST", "/v1/passkeys/authentications", {}).status == 200
    log = (stack.logs / "gateway.log").read_text()
    assert "event=grpc.mutual_tls" in log


def run_service(stack, service, **overrides):
    """Starts `service` with the stack's environment plus `overrides` and returns (status, stderr) once it exits,
    or None (after stopping it) when it was still running after 3 seconds."""
    env = stack.environment(service)
    env.update({f"{service.split('-')[0].upper()}_SERVICE_LISTEN": "127.0.0.1:0", "GATEWAY_LISTEN": "127.0.0.1:0"})
    env.pop("GRPC_HEALTH_LISTEN", None)
    env.pop("METRICS_LISTEN", None)
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    process = subprocess.Popen([str(BIN / service)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _, errors = process.communicate(timeout=3)
        return process.returncode, errors.decode()
    except subprocess.TimeoutExpired:
        process.terminate()
        _, errors = process.communicate(timeout=15)
        return None, errors.decode()


@pytest.mark.parametrize("service", ["session-service", "gateway"])
def test_bad_tls_files_stop_the_process_naming_the_variable_and_the_file(stack, foreign, tmp_path, service):
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
    missing = tmp_path / "missing.pem"
    cases = [
        ({"GRPC_TLS_CERTIFICATE": str(missing)}, "GRPC_TLS_CERTIFICATE", str(missing)),
        ({"GRPC_TLS_KEY": str(tmp_path)}, "GRPC_TLS_KEY", str(tmp_path)),
        ({"GRPC_TLS_CERTIFICATE": str(garbage)}, "GRPC_TLS_CERTIFICATE", str(garbage)),
        # A key that is not the certificate's.
        ({"GRPC_TLS_KEY": str(foreign / f"{service}.key")}, "GRPC_TLS_KEY", str(foreign / f"{service}.key")),
        ({"GRPC_TLS_CA": str(garbage)}, "GRPC_TLS_CA", str(garbage)),
        ({"GRPC_TLS_CA": None}, "GRPC_TLS_CA", "GRPC_PLAINTEXT=true"),
        ({"GRPC_TLS_CERTIFICATE": None, "GRPC_TLS_KEY": None, "GRPC_TLS_CA": None}, "GRPC_TLS_CERTIFICATE",
         "mutual TLS"),
        ({"GRPC_PLAINTEXT": "true"}, "GRPC_PLAINTEXT", "GRPC_TLS_CERTIFICATE"),
        ({"GRPC_TRUST_DOMAIN": "Not A Domain"}, "GRPC_TRUST_DOMAIN", "Not A Domain"),
    ]
    for overrides, variable, mentioned in cases:
        status, errors = run_service(stack, service, **overrides)
        assert status == 2, (overrides, status, errors)
        assert variable in errors and mentioned in errors, (overrides, errors)


def test_plaintext_runs_only_when_asked_and_warns(stack):
    status, errors = run_service(
        stack, "challenge-service", GRPC_TLS_CERTIFICATE=None, GRPC_TLS_KEY=None, GRPC_TLS_CA=None,
        GRPC_PLAINTEXT="true")
    assert status is None, errors
    assert re.search(r"level=warning .*event=grpc\.plaintext", errors), errors
