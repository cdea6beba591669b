"""The recovery suite: the real stack (Tests/Support/python/passkey_stack.py) sending mail to a real SMTP server (aiosmtpd)
started here, whose delivered messages the tests read."""

import asyncio
import email
import email.policy
import itertools
import pathlib
import re
import subprocess
import sys
import threading
import time
import uuid

import pytest
from aiosmtpd.controller import Controller

TESTS = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "Support" / "python"))

from passkey_stack import Stack as _Stack, free_port  # noqa: E402
from openssl_authenticator import registration_response  # noqa: E402
import chromium  # noqa: E402


def Stack(environment=None):
    """The shared stack (mutual TLS between the services, as everywhere) with mail to this suite's relay: the
    calls name client addresses of their own in X-Forwarded-For (the gateway trusts 127.0.0.1 as a proxy)."""
    return _Stack("recovery", environment={"PASSKEY_TRUSTED_PROXIES": "127.0.0.1", **(environment or {})})


@pytest.fixture
def browser(request, stack):
    driver = chromium.start()
    yield driver
    chromium.keep_artifacts_if_failed(request, driver, stack)
    driver.quit()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    chromium.record_reports(item, outcome)


PASSWORD = "recovery suite password"
# Each client's /64 (the gateway counts an IPv6 client by its /64): numbered, so no two clients share one.
_client_networks = itertools.count(1)
CODE = re.compile(r"^ {4}([0-9]{8})\r?$", re.MULTILINE)


class Mailbox:
    """An aiosmtpd handler that keeps every message it accepts; it can be made slow, and stopped and started."""

    def __init__(self, **smtp_options):
        self.messages = []
        self.delay = 0.0
        self.changed = threading.Condition()
        self.port = free_port()
        self.controller = None
        # aiosmtpd's SMTP settings: STARTTLS, AUTH.
        self.smtp_options = smtp_options
        self.logins = []

    def start(self):
        self.controller = Controller(self, hostname="127.0.0.1", port=self.port, **self.smtp_options)
        self.controller.start()

    def stop(self):
        self.controller.stop()
        self.controller = None

    async def handle_DATA(self, server, session, envelope):
        if self.delay:
            await asyncio.sleep(self.delay)
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        self.logins.append((session.authenticated, getattr(session, "ssl", None) is not None))
        body = message.get_body(("plain",)).get_content()
        found = CODE.search(body)
        with self.changed:
            self.messages.append({
                "envelope_from": envelope.mail_from, "recipients": list(envelope.rcpt_tos),
                "to": str(message["To"]), "subject": str(message["Subject"]), "from": str(message["From"]),
                "message_id": str(message["Message-ID"]), "body": body, "code": found.group(1) if found else None,
            })
            self.changed.notify_all()
        return "250 OK: queued"

    def to(self, address):
        with self.changed:
            return [m for m in self.messages if address in m["recipients"]]

    def wait_for(self, address, count=1, timeout=20):
        """The messages sent to `address` once there are `count` of them."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                found = [m for m in self.messages if address in m["recipients"]]
                if len(found) >= count:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"{len(found)} of {count} messages to {address} arrived")
                self.changed.wait(remaining)

    def latest_code(self, address, count=1):
        return self.wait_for(address, count)[-1]["code"]


@pytest.fixture(scope="session")
def mailbox():
    box = Mailbox()
    box.start()
    yield box
    if box.controller:
        box.stop()


@pytest.fixture(scope="session")
def stack(mailbox):
    running = Stack({
        "SMTP_URL": f"smtp://127.0.0.1:{mailbox.port}",
        "SMTP_STARTTLS": "off",
        "SMTP_FROM": "no-reply@passkey.test",
        "EVENT_LOOP_THREADS": "1",
        "PASSKEY_RP_NAME": "Recovery Suite",
        "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "0",
        "PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS": "0",
        # Per email the default (20/h, bursts of 10); per address a burst of 60, so that only the flood test meets it.
        "PASSKEY_RATE_LIMIT_RECOVERY_PER_ADDRESS": "600/h",
    }).start()
    yield running
    running.stop()


class Client:
    """Calls to the gateway from one client address of its own (the stack trusts 127.0.0.1 as a proxy)."""

    def __init__(self, stack, address=None):
        self.stack = stack
        # A /64 of its own: the gateway counts an IPv6 client by its /64.
        self.address = address or f"2001:db8:16:{next(_client_networks):x}::1"

    def call(self, method, path, body=None, token=None):
        return self.stack.request(method, path, body, token=token, client_address=self.address)

    def create_password_account(self, address=None):
        address = address or f"recovery-{uuid.uuid4().hex[:12]}@example.com"
        created = self.call(
            "POST", "/v1/accounts/password", {"email": address, "password": PASSWORD, "displayName": "Ada"})
        assert created.status == 201, created.body
        signed_in = self.call("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD})
        assert signed_in.status == 200, signed_in.body
        return address, signed_in.json()["accessToken"]

    def create_passkey_account(self):
        address = f"recovery-{uuid.uuid4().hex[:12]}@example.com"
        start = self.call("POST", "/v1/passkeys/account-registrations", {"email": address, "displayName": "Grace"})
        assert start.status == 200, start.body
        body = dict(registration_response(start.json(), self.stack.origin),
                    registrationID=start.json()["registrationID"])
        finish = self.call("POST", "/v1/passkeys/account-registrations/finish", body)
        assert finish.status == 201, finish.body
        return address

    def register_passkey(self, token, finish_path):
        start = self.call("POST", "/v1/passkeys/registrations", {}, token=token)
        assert start.status == 200, start.body
        body = dict(registration_response(start.json(), self.stack.origin),
                    challengeID=start.json()["challengeID"])
        return self.call("POST", finish_path, body, token=token)

