"""Mail an operator sends through the admin API, delivered to the real SMTP server: a verification code to an
unverified address, a recovery code to a verified one that the user then trades for a recovery session, the refusals,
and the recovery code that goes out by default when an operator removes an account's last passkey."""

import json
import os
import subprocess
import urllib.error
import urllib.request

import pytest

from conftest import Client, Stack
from passkey_stack import BIN, free_port
from test_recovery import verified_account


@pytest.fixture(scope="module")
def admin_stack(mailbox):
    port = free_port()
    running = Stack({
        "SMTP_URL": f"smtp://127.0.0.1:{mailbox.port}", "SMTP_STARTTLS": "off", "SMTP_FROM": "no-reply@passkey.test",
        "ADMIN_LISTEN": f"127.0.0.1:{port}", "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "0",
        "PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS": "0"}).start()
    running.admin_url = f"http://127.0.0.1:{port}"
    running.admin_token = subprocess.run(
        [BIN / "passkey-admin", "token", "create", "--name", "mail", "--scopes", "read,write"],
        env={**os.environ, "DATABASE_URL": running.url}, capture_output=True, text=True, check=True,
    ).stdout.strip().splitlines()[-1]
    yield running
    running.stop()


def admin(stack, method, path):
    request = urllib.request.Request(stack.admin_url + path, method=method)
    request.add_header("Authorization", f"Bearer {stack.admin_token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
            return response.status, json.loads(body) if body else None
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def account_id(client, token):
    return client.call("GET", "/v1/session", token=token).json()["accountID"]


def test_an_operator_sends_a_verification_code_and_a_recovery_code(admin_stack, mailbox):
    client = Client(admin_stack)
    address, token = client.create_password_account()
    account = account_id(client, token)
    mailbox.wait_for(address, 1)
    # Unverified: a verification code can go, a recovery code cannot.
    assert admin(admin_stack, "POST", f"/admin/v1/accounts/{account}/verification-email") == (202, {"sentTo": address})
    code = mailbox.latest_code(address, count=2)
    status, body = admin(admin_stack, "POST", f"/admin/v1/accounts/{account}/recovery-email")
    assert (status, body["code"]) == (400, "invalid_request"), body
    assert client.call("POST", "/v1/account/email/verify", {"code": code}, token=token).status == 204
    # Verified now: the reverse.
    status, body = admin(admin_stack, "POST", f"/admin/v1/accounts/{account}/verification-email")
    assert (status, body["code"]) == (400, "invalid_request"), body
    status, body = admin(admin_stack, "POST", f"/admin/v1/accounts/{account}/recovery-email?email={address}")
    assert (status, body) == (202, {"sentTo": address})
    recovery_code = mailbox.latest_code(address, count=3)
    finished = client.call("POST", "/v1/recovery/finish", {"email": address, "code": recovery_code})
    assert finished.status == 200 and finished.json()["authenticationMethod"] == "recovery", finished.body
    # Another account's address, or an account that does not exist, is 404.
    other, _ = client.create_password_account()
    status, body = admin(admin_stack, "POST", f"/admin/v1/accounts/{account}/recovery-email?email={other}")
    assert (status, body["code"]) == (404, "not_found")
    status, body = admin(admin_stack, "POST", "/admin/v1/accounts/00000000-0000-4000-8000-000000000000/recovery-email")
    assert (status, body["code"]) == (404, "not_found")
    status, body = admin(admin_stack, "POST", f"/admin/v1/accounts/{account}/recovery-email?nope=1")
    assert (status, body["code"]) == (400, "invalid_request")
    # The sends are in the stored trail, naming the admin token.
    rows = admin_stack.sql(f"SELECT type, actor FROM audit_events WHERE account_id = '{account}' "
                             "AND type IN ('audit.email.verification_sent', 'audit.recovery.started') ORDER BY id")
    assert rows[-2:] == [["audit.email.verification_sent", "admin"], ["audit.recovery.started", "admin"]], rows


def test_a_disabled_account_gets_no_recovery_code(admin_stack, mailbox):
    client = Client(admin_stack)
    address, token = verified_account(admin_stack, mailbox, client)
    account = account_id(client, token)
    assert admin(admin_stack, "POST", f"/admin/v1/accounts/{account}/disable")[0] == 200
    status, body = admin(admin_stack, "POST", f"/admin/v1/accounts/{account}/recovery-email")
    assert (status, body["code"]) == (403, "account_disabled"), body
    assert len(mailbox.to(address)) == 1


def test_removing_the_last_passkey_sends_a_recovery_code_unless_told_not_to(admin_stack, mailbox):
    client = Client(admin_stack)
    for send in (True, False):
        address = client.create_passkey_account()
        verification = mailbox.latest_code(address)
        account = admin_stack.sql(f"SELECT account_id FROM account_emails WHERE email = '{address}'")[0][0]
        admin_stack.sql(f"UPDATE account_emails SET verified_at = now() WHERE email = '{address}'")
        assert verification
        detail = admin(admin_stack, "GET", f"/admin/v1/accounts/{account}")[1]
        credential = detail["passkeys"][0]["credentialID"]
        path = f"/admin/v1/accounts/{account}/passkeys/{credential}?override=lastSignInMethod"
        assert admin(admin_stack, "DELETE", path + ("" if send else "&recoveryEmail=false"))[0] == 204
        # The removal is mailed to the verified address either way; the recovery code only when asked for.
        if send:
            messages = mailbox.wait_for(address, count=3)
            [code] = [m["code"] for m in messages[1:] if m["code"]]
            finished = client.call("POST", "/v1/recovery/finish", {"email": address, "code": code})
            assert finished.status == 200, finished.body
        else:
            import time
            time.sleep(1.5)
            messages = mailbox.to(address)
            assert len(messages) == 2 and "passkey was removed" in messages[1]["subject"], messages
            assert messages[1]["code"] is None
