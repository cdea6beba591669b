"""Certificates rotate under load, as cert-manager rotates a Secret: every process reads its files again, new
connections get the new certificates, open connections and calls go on, and a half-written change (a new key
beside the old certificate) is refused while the last good pair stays in force."""
import os
import shutil
import socket
import ssl
import subprocess
import threading
import time

import grpc

from conftest import RELOAD_INTERVAL, serial_of
from passkey_stack import BIN, SERVICES, Stack, certificates_shell

IDENTITIES = SERVICES + ("gateway",)


def presented_serial(stack, service, probe):
    """The serial of the certificate `service` presents to a new connection from a client holding `probe`'s copy
    of the original gateway identity (the live files change under the test)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(stack.certificates / "ca.pem")
    context.load_cert_chain(probe / "gateway.pem", probe / "gateway.key")
    context.set_alpn_protocols(["h2"])
    with socket.create_connection(("127.0.0.1", stack.ports[service]), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            return serial_of(tls.getpeercert(binary_form=True))


class Load:
    """Calls through the gateway (all three services) and straight to session-service over one long-lived grpcio
    channel, counting every failure, until stopped."""

    def __init__(self, stack, token):
        self.stack = stack
        self.token = token
        self.failures = []
        self.calls = 0
        self.stopping = threading.Event()
        root = (stack.certificates / "ca.pem").read_bytes()
        credentials = grpc.ssl_channel_credentials(
            root, (stack.certificates / "gateway.key").read_bytes(), (stack.certificates / "gateway.pem").read_bytes())
        self.channel = grpc.secure_channel(
            f"127.0.0.1:{stack.ports['session-service']}", credentials,
            options=[("grpc.ssl_target_name_override", "localhost")])
        self.threads = [threading.Thread(target=self.gateway_loop), threading.Thread(target=self.grpc_loop)]

    def gateway_loop(self):
        while not self.stopping.is_set():
            for method, path, token in (("POST", "/v1/passkeys/authentications", None), ("GET", "/v1/account", self.token),
                                        ("GET", "/v1/passkeys", self.token)):
                response = self.stack.request(method, path, {} if method == "POST" else None, token=token)
                self.calls += 1
                if response.status != 200:
                    self.failures.append((path, response.status, response.body[:200]))

    def grpc_loop(self):
        validate = self.channel.unary_unary("/grpc.health.v1.Health/Check")
        while not self.stopping.is_set():
            try:
                validate(b"", timeout=5)
                self.calls += 1
            except grpc.RpcError as error:
                self.failures.append(("grpc", error.code(), error.details()))
            time.sleep(0.002)

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_):
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=30)


def wait_reload():
    time.sleep(4 * float(RELOAD_INTERVAL.removesuffix("ms")) / 1000 + 0.5)


def test_rotation_under_load_keeps_every_call_and_new_connections_get_the_new_certificates(tmp_path):
    stack = Stack("rotation", environment={"GRPC_TLS_RELOAD_INTERVAL": RELOAD_INTERVAL}).start()
    try:
        email = "rotation@example.com"
        created = stack.request(
            "POST", "/v1/accounts/password", {"email": email, "password": "correct horse battery", "displayName": "R"})
        assert created.status == 201, created.body
        token = stack.request("POST", "/v1/sessions/password", {"email": email, "password": "correct horse battery"}).json()[
            "accessToken"]
        directory = stack.certificates
        probe = tmp_path / "probe"
        probe.mkdir()
        for name in ("gateway.pem", "gateway.key"):
            shutil.copy(directory / name, probe / name)
        old_serials = {service: presented_serial(stack, service, probe) for service in SERVICES}
        staging = tmp_path / "staging"
        staging.mkdir()
        # A second CA, as when the CA itself rotates: first every process trusts both...
        certificates_shell(
            f'cd "{staging}" && openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 '
            f'-keyout ca2.key -out ca2.pem -days 30 -subj "/CN=second CA" '
            f'-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"')
        with Load(stack, token) as load:
            time.sleep(0.5)
            bundle = tmp_path / "bundle.pem"
            bundle.write_bytes((directory / "ca.pem").read_bytes() + (staging / "ca2.pem").read_bytes())
            os.replace(bundle, directory / "ca.pem")
            wait_reload()
            # ... then each process gets a certificate from the new CA, its key written before its certificate, as a
            # non-atomic update would: for a moment the key does not match the certificate.
            for name in IDENTITIES:
                certificates_shell(f'make_grpc_leaf "{staging}" "{name}" passkey.internal 30 ca2')
                os.replace(staging / f"{name}.key", directory / f"{name}.key")
            wait_reload()
            half_written = {service: presented_serial(stack, service, probe) for service in SERVICES}
            for name in IDENTITIES:
                os.replace(staging / f"{name}.pem", directory / f"{name}.pem")
            wait_reload()
            time.sleep(0.5)
        assert load.calls > 200, load.calls
        assert load.failures == [], load.failures[:10]
        # While the key and certificate did not match, the last good pair stayed in force.
        assert half_written == old_serials
        for service in SERVICES:
            new = serial_of((directory / f"{service}.pem").read_bytes())
            assert presented_serial(stack, service, probe) == new != old_serials[service], service
        for name in IDENTITIES:
            log = (stack.logs / f"{name}.log").read_text()
            assert "event=grpc.tls_reloaded" in log, name
            assert "event=grpc.tls_reload_failed variable=GRPC_TLS_KEY" in log, name

        # The gateway's own new connections present its new certificate: a session-service that trusts only the new
        # CA serves the gateway once the gateway reconnects to it.
        only_new = tmp_path / "only-new-ca.pem"
        shutil.copy(staging / "ca2.pem", only_new)
        stack.processes["session-service"].terminate()
        stack.processes["session-service"].wait(timeout=15)
        env = stack.environment("session-service")
        env["GRPC_TLS_CA"] = str(only_new)
        log = open(stack.logs / "session-service-restarted.log", "wb")
        stack.processes["session-service"] = subprocess.Popen(
            [str(BIN / "session-service")], env=env, stdout=log, stderr=log)
        deadline = time.monotonic() + 15
        status = None
        while time.monotonic() < deadline:
            status = stack.request("GET", "/v1/account", token=token).status
            if status == 200:
                break
            time.sleep(0.1)
        assert status == 200, stack.log_text()
    finally:
        stack.stop()

