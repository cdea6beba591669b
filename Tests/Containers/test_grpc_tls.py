"""The container stack's gRPC is mutual TLS, as in Kubernetes: grpcio, from this host to the services' containers on
the stack's network, with the certificates deploy/containers/up mounted into them. The gateway's identity is
served; another service's identity is refused; plaintext is not spoken on the gRPC port; grpc.health.v1 alone is
served in plaintext on the health port (GRPC_HEALTH_LISTEN), which the probes of the Kubernetes manifests ask.

Runs before test_rollout.py on the same stack and leaves the replicas as they are."""

from __future__ import annotations

import grpc
import pytest

HEALTH_CHECK = "/grpc.health.v1.Health/Check"
SERVING = b"\x08\x01"
GRPC_PORTS = {"challenge-service": 50051, "verification-service": 50052, "session-service": 50053}
HEALTH_PORT = 50060
# One method of each service, the gateway's to call.
METHODS = {
    "challenge-service": "/passkey.v1.ChallengeService/BeginAuthentication",
    "verification-service": "/passkey.v1.VerificationService/ListCredentials",
    "session-service": "/passkey.v1.SessionService/ValidateSession",
}


def health_request(service: str = "") -> bytes:
    """A grpc.health.v1.HealthCheckRequest for `service` (field 1, a string)."""
    encoded = service.encode()
    return (b"\x0a" + bytes([len(encoded)]) + encoded) if encoded else b""


def call(channel, path: str, request: bytes = b"", timeout: float = 5):
    """(status code, response bytes) of one unary call."""
    code, response, _, _ = call_with_trailers(channel, path, request, timeout)
    return code, response


def call_with_trailers(channel, path: str, request: bytes = b"", timeout: float = 5):
    """(status code, response bytes, details, trailing metadata as a dict) of one unary call."""
    try:
        response, state = channel.unary_unary(path).with_call(request, timeout=timeout)
        return grpc.StatusCode.OK, response, "", dict(state.trailing_metadata() or ())
    except grpc.RpcError as error:
        return error.code(), None, error.details() or "", dict(error.trailing_metadata() or ())


def tls_channel(stack, service: str, identity: str):
    """A channel to replica 1 of SERVICE, trusting the stack's CA and presenting IDENTITY's certificate, from the
    very files that identity's containers mount."""
    files = stack.grpc_identity(identity)
    credentials = grpc.ssl_channel_credentials(
        (files / "ca.crt").read_bytes(), (files / "tls.key").read_bytes(), (files / "tls.crt").read_bytes())
    # grpcio checks a host name; the certificates carry the service's own name as a DNS SAN too.
    return grpc.secure_channel(
        f"{stack.address(service, 1)}:{GRPC_PORTS[service]}", credentials,
        options=[("grpc.ssl_target_name_override", service)])


@pytest.mark.parametrize("service", sorted(GRPC_PORTS))
def test_the_gateway_identity_is_served(stack, service):
    with tls_channel(stack, service, "gateway") as channel:
        assert call(channel, HEALTH_CHECK) == (grpc.StatusCode.OK, SERVING)
        code, _, details, trailers = call_with_trailers(channel, METHODS[service])
        # The handler ran: it answered, or refused the empty request with a domain error, which carries the
        # error-code trailer (the caller policy's refusals carry none).
        assert code == grpc.StatusCode.OK or "error-code" in trailers, (code, details, trailers)


@pytest.mark.parametrize("service", sorted(GRPC_PORTS))
def test_another_service_identity_is_refused(stack, service):
    caller = "session-service" if service != "session-service" else "verification-service"
    with tls_channel(stack, service, caller) as channel:
        # Health is open to every identity; the service's methods are the gateway's alone.
        assert call(channel, HEALTH_CHECK) == (grpc.StatusCode.OK, SERVING)
        code, _, details, trailers = call_with_trailers(channel, METHODS[service])
        assert code == grpc.StatusCode.PERMISSION_DENIED, (code, details)
        assert "error-code" not in trailers and f"spiffe://passkey.internal/{caller}" in details, (details, trailers)


@pytest.mark.parametrize("service", sorted(GRPC_PORTS))
def test_the_grpc_port_speaks_no_plaintext(stack, service):
    with grpc.insecure_channel(f"{stack.address(service, 1)}:{GRPC_PORTS[service]}") as channel:
        assert call(channel, HEALTH_CHECK, timeout=3)[0] == grpc.StatusCode.UNAVAILABLE
        assert call(channel, METHODS[service], timeout=3)[0] == grpc.StatusCode.UNAVAILABLE


@pytest.mark.parametrize("service", sorted(GRPC_PORTS))
def test_the_health_port_serves_health_alone_in_plaintext(stack, service):
    with grpc.insecure_channel(f"{stack.address(service, 1)}:{HEALTH_PORT}") as channel:
        # What the Kubernetes probes ask: readiness the whole server, startup and liveness "liveness".
        assert call(channel, HEALTH_CHECK, health_request()) == (grpc.StatusCode.OK, SERVING)
        assert call(channel, HEALTH_CHECK, health_request("liveness")) == (grpc.StatusCode.OK, SERVING)
        assert call(channel, METHODS[service])[0] == grpc.StatusCode.UNIMPLEMENTED
