"""The legacy password suite: the real stack (Tests/Support/python/passkey_stack.py: the three services and the
gateway over mutual TLS, a fresh database) with each service's /metrics on a port of its own, an authenticator that
really signs (an ES256 key made and used by the openssl command), and SQL on the stack's database."""

import itertools
import pathlib
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

import pytest

TESTS = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "Support" / "python"))

from passkey_stack import Stack, free_port  # noqa: E402
from openssl_authenticator import Authenticator  # noqa: E402

PASSWORD = "legacy suite password"
# Each call's /64 (the gateway counts an IPv6 client by its /64): numbered, so no two calls share one.
_client_networks = itertools.count(1)


class Client:
    """Calls through the gateway, each from a client address of its own (so no rate limit is shared)."""

    def __init__(self, stack, metrics_ports):
        self.stack = stack
        self.metrics_ports = metrics_ports
        self.keys = tempfile.mkdtemp(prefix="passkey-legacy-keys-")

    def call(self, method, path, body=None, token=None):
        return self.stack.request(method, path, body, token=token, client_address=f"2001:db8:15:{next(_client_networks):x}::1")

    def sql(self, statement):
        return self.stack.sql(statement)

    def create_password_account(self, password=PASSWORD):
        address = f"legacy-{uuid.uuid4().hex[:12]}@example.com"
        created = self.call("POST", "/v1/accounts/password",
                            {"email": address, "password": password, "displayName": "Legacy"})
        assert created.status == 201, created.body
        return address, created.json()["accountID"]

    def sign_in(self, address, password):
        return self.call("POST", "/v1/sessions/password", {"email": address, "password": password})

    def stored_hash(self, account_id):
        rows = self.sql(f"SELECT password_hash FROM password_credentials WHERE account_id = '{account_id}'")
        return rows[0][0] if rows else None

    def store_hash(self, account_id, encoded):
        """Puts a hash another system made in place of the account's, as an import leaves it."""
        escaped = encoded.replace("'", "''")
        self.sql(f"UPDATE password_credentials SET password_hash = '{escaped}' WHERE account_id = '{account_id}'")

    def add_passkey(self, token, mode="modal"):
        authenticator = Authenticator(self.keys)
        start = self.call("POST", "/v1/passkeys/registrations", {"mode": mode}, token=token)
        assert start.status == 200, start.body
        body = dict(authenticator.registration(start.json(), self.stack.origin, user_present=mode == "modal"),
                    challengeID=start.json()["challengeID"])
        finish = self.call("POST", "/v1/passkeys/registrations/finish", body, token=token)
        assert finish.status == 204, finish.body
        return authenticator

    def create_passkey_account(self):
        authenticator = Authenticator(self.keys)
        address = f"passkey-{uuid.uuid4().hex[:12]}@example.com"
        start = self.call("POST", "/v1/passkeys/account-registrations", {"email": address, "displayName": "Grace"})
        assert start.status == 200, start.body
        body = dict(authenticator.registration(start.json(), self.stack.origin),
                    registrationID=start.json()["registrationID"])
        finish = self.call("POST", "/v1/passkeys/account-registrations/finish", body)
        assert finish.status == 201, finish.body
        return authenticator, finish.json()["accountID"]

    def passkey_sign_in(self, authenticator):
        start = self.call("POST", "/v1/passkeys/authentications", {})
        assert start.status == 200, start.body
        return self.call("POST", "/v1/passkeys/authentications/finish",
                         authenticator.assertion(start.json(), self.stack.origin))

    def metrics(self, service):
        """The service's Prometheus samples as {"name{labels}": value}."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_ports[service]}/metrics", timeout=5) as response:
            text = response.read().decode()
        samples = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                samples[name] = float(value)
        return samples

    def sample(self, service, name):
        return self.metrics(service).get(name, 0.0)

    def wait_for_sample(self, service, name, value, timeout=25):
        """The gauges are refreshed every 15 s: waits for `name` to read `value`."""
        deadline = time.monotonic() + timeout
        while True:
            current = self.sample(service, name)
            if current == value or time.monotonic() > deadline:
                return current
            time.sleep(0.5)

    def log(self, service):
        return (self.stack.logs / f"{service}.log").read_text(errors="replace")


@pytest.fixture(scope="module")
def client():
    metrics_ports = {name: free_port() for name in ("challenge-service", "session-service", "verification-service")}
    stack = Stack("legacy", environment={"PASSKEY_TRUSTED_PROXIES": "127.0.0.1"},
                  per_process={name: {"METRICS_LISTEN": f"127.0.0.1:{port}"} for name, port in metrics_ports.items()})
    stack.start()
    yield Client(stack, metrics_ports)
    stack.stop()
