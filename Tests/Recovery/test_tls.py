"""The relay as production has it: STARTTLS required and AUTH, with a certificate the services trust through
SMTP_CA_FILE. A wrong password or a relay that cannot upgrade sends nothing, fails no request, and keeps the
message for later."""

import ssl
import subprocess
import tempfile
import time
import pathlib

import pytest
from aiosmtpd.smtp import AuthResult

from conftest import Client, Mailbox, Stack

USER, SECRET = "relay-user", "relay secret"


def authenticate(server, session, envelope, mechanism, auth_data):
    return AuthResult(success=auth_data.login == USER.encode() and auth_data.password == SECRET.encode())


@pytest.fixture(scope="module")
def certificate():
    directory = pathlib.Path(tempfile.mkdtemp(prefix="passkey-smtp-tls-"))
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(directory / "key.pem"),
         "-out", str(directory / "cert.pem")], check=True, capture_output=True)
    return directory / "cert.pem", directory / "key.pem"


@pytest.fixture(scope="module")
def tls_mailbox(certificate):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    box = Mailbox(tls_context=context, require_starttls=True, auth_required=True, authenticator=authenticate)
    box.start()
    yield box
    box.stop()


def start_stack(mailbox, certificate, password, extra=None):
    return Stack({
        "SMTP_URL": f"smtp://127.0.0.1:{mailbox.port}",
        "SMTP_STARTTLS": "required",
        "SMTP_CA_FILE": str(certificate[0]),
        "SMTP_USERNAME": USER,
        "SMTP_PASSWORD": password,
        "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "0",
        **(extra or {}),
    }).start()


def wait_for_attempt(stack, address, timeout=25):
    """The outbox row of the one message to `address` once a delivery attempt failed: [[attempts, last_error]]."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = stack.sql(f"SELECT attempts, last_error FROM email_outbox WHERE recipient = '{address}' "
                           "AND sent_at IS NULL AND attempts > 0")
        if rows:
            return rows
        time.sleep(0.2)
    raise AssertionError(f"no failed attempt recorded for {address}")


def test_mail_goes_over_starttls_with_auth(tls_mailbox, certificate):
    stack = start_stack(tls_mailbox, certificate, SECRET)
    try:
        address, _ = Client(stack).create_password_account()
        [message] = tls_mailbox.wait_for(address)
        assert message["code"]
        assert tls_mailbox.logins[-1] == (True, True), "authenticated, over TLS"
        assert SECRET not in stack.log_text()
    finally:
        stack.stop()


def test_a_wrong_password_or_no_starttls_sends_nothing_and_keeps_the_message(tls_mailbox, certificate):
    stack = start_stack(tls_mailbox, certificate, "not the secret")
    try:
        address, _ = Client(stack).create_password_account()
        # aiosmtpd never answers a refused AUTH, so the attempt ends at the 10 s connect budget.
        [[attempts, error]] = wait_for_attempt(stack, address)
        assert tls_mailbox.to(address) == []
        assert error, "the failure is recorded for the retry"
        assert "not the secret" not in stack.log_text()
    finally:
        stack.stop()
    # A plain relay when STARTTLS is required: nothing is sent in the clear.
    plain = Mailbox()
    plain.start()
    try:
        stack = start_stack(plain, certificate, SECRET)
        try:
            address, _ = Client(stack).create_password_account()
            [[attempts, error]] = wait_for_attempt(stack, address)
            assert plain.to(address) == []
            assert "STARTTLS" in error or "SSL" in error or "TLS" in error, error
        finally:
            stack.stop()
    finally:
        plain.stop()
