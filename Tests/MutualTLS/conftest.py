"""Mutual TLS between the gateway and the services, against the real executables: the stack of
Tests/Support/python/passkey_stack.py (which runs with mutual TLS, as `deploy/local/run` does), and certificates a
peer may hold: the right ones, another CA's, an expired one."""
import pathlib
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "Support" / "python"))

from passkey_stack import BIN, Stack, certificates_shell, free_port, make_certificates  # noqa: E402

RELOAD_INTERVAL = "300ms"


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    health_ports = {name: free_port() for name in ("challenge-service", "session-service", "verification-service")}
    metrics_ports = {name: free_port() for name in health_ports}
    per_process = {
        name: {"GRPC_HEALTH_LISTEN": f"127.0.0.1:{health_ports[name]}", "METRICS_LISTEN": f"127.0.0.1:{metrics_ports[name]}"}
        for name in health_ports
    }
    running = Stack(
        "mtls", environment={"GRPC_TLS_RELOAD_INTERVAL": RELOAD_INTERVAL, "EVENT_LOOP_THREADS": "1"},
        per_process=per_process)
    running.health_ports = health_ports
    running.metrics_ports = metrics_ports
    running.start()
    yield running
    running.stop()


@pytest.fixture(scope="session")
def foreign(tmp_path_factory):
    """A complete set from another CA, with the same names."""
    return make_certificates(tmp_path_factory.mktemp("foreign"))


@pytest.fixture(scope="session")
def expired(stack, tmp_path_factory):
    """The gateway's identity, issued by the stack's CA, expired a day ago."""
    directory = tmp_path_factory.mktemp("expired")
    for name in ("ca.pem", "ca.key"):
        (directory / name).write_bytes((stack.certificates / name).read_bytes())
    certificates_shell(f'make_grpc_leaf "{directory}" gateway passkey.internal -1')
    return directory


def serial_of(pem_bytes):
    """The serial number openssl reads from a PEM (or DER) certificate, in hex."""
    form = "PEM" if pem_bytes.startswith(b"-----") else "DER"
    out = subprocess.run(
        ["openssl", "x509", "-inform", form, "-noout", "-serial"], input=pem_bytes, capture_output=True, check=True)
    return out.stdout.decode().strip().split("=", 1)[1].upper()


__all__ = ["BIN", "serial_of"]
