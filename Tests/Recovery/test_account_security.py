"""Account security against the real executables: sensitive changes need a recent sign-in and a reauthentication
bound to the session, a password can be set and changed (ending the other sessions, refusing common ones), a
recovery voids the old password either way it ends, an operator can force a reset, and every change of a factor
is mailed to the account's verified addresses, read here from the real SMTP server."""

import base64
import json
import re
import time
import uuid

import pytest

from conftest import PASSWORD, Client
from openssl_authenticator import Authenticator
from test_admin_mail import admin, admin_stack  # noqa: F401  (the module's admin stack fixture)
from test_recovery import verified_account

NEW_PASSWORD = "a brand new passphrase"
EIGHT_DIGITS = re.compile(r"\b[0-9]{8}\b")


def problem(response):
    document = response.json()
    return response.status, document["code"], document.get("reason")


def age_sessions(stack, token, client, seconds=3600):
    """Moves the session's sign-in (and any reauthentication) `seconds` into the past, as if it were that old."""
    session_id = client.call("GET", "/v1/session", token=token).json()["sessionID"]
    stack.sql(
        f"UPDATE authentication_sessions SET created_at = created_at - interval '{seconds} seconds', "
        f"authenticated_at = authenticated_at - interval '{seconds} seconds' WHERE id = '{session_id}'")
    return session_id


def notices(mailbox, address, subject_part, count=1, timeout=20):
    """The notifications to `address` whose subject has `subject_part`, once `count` arrived."""
    deadline = time.monotonic() + timeout
    with mailbox.changed:
        while True:
            found = [m for m in mailbox.messages if address in m["recipients"] and subject_part in m["subject"]]
            if len(found) >= count:
                return found
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                subjects = [m["subject"] for m in mailbox.messages if address in m["recipients"]]
                raise AssertionError(f"no notification '{subject_part}' to {address}; it got {subjects}")
            mailbox.changed.wait(remaining)


def assert_no_secret(message):
    assert message["code"] is None and not EIGHT_DIGITS.search(message["body"]), message["body"]
    assert "If this was not you" in message["body"] or "If you did not expect this" in message["body"]


def claims(access_token):
    payload = access_token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_an_old_session_changes_no_factor_until_it_reauthenticates_with_the_password(stack, mailbox):
    client = Client(stack)
    address, token = verified_account(stack, mailbox, client)
    session_id = age_sessions(stack, token, client)
    sensitive = [
        ("POST", "/v1/account/recovery-codes", {}), ("POST", "/v1/account/password", {"password": NEW_PASSWORD}),
        ("DELETE", "/v1/account/password", None), ("POST", "/v1/passkeys/registrations", {}),
        ("DELETE", f"/v1/sessions/{uuid.uuid4()}", None), ("POST", "/v1/account/email/verification", {}),
    ]
    for method, path, body in sensitive:
        assert problem(client.call(method, path, body, token=token))[:2] == (403, "reauthentication_required"), path
    # Reading and renaming are not sensitive.
    assert client.call("GET", "/v1/account", token=token).status == 200
    before = len(mailbox.to(address))

    wrong = client.call("POST", "/v1/session/reauthentication/password", {"password": "not the password"}, token=token)
    assert problem(wrong)[:2] == (401, "invalid_credentials")
    assert problem(client.call("POST", "/v1/account/recovery-codes", {}, token=token))[0] == 403
    right = client.call("POST", "/v1/session/reauthentication/password", {"password": PASSWORD}, token=token)
    assert right.status == 204, right.body
    codes = client.call("POST", "/v1/account/recovery-codes", {}, token=token)
    assert codes.status == 200 and len(codes.json()["codes"]) == 10
    # The same session, with a new sign-in time, audited.
    assert client.call("GET", "/v1/session", token=token).json()["sessionID"] == session_id
    [[method]] = stack.sql(
        "SELECT detail->>'method' FROM audit_events WHERE type = 'audit.session.reauthenticated' "
        f"AND detail->>'session.id' = '{session_id}'")
    assert method == "password"
    [message] = notices(mailbox, address, "New recovery codes")
    assert_no_secret(message)
    assert client.address in message["body"], "the notice names the client address"
    assert len(mailbox.to(address)) == before + 1


def test_a_passkey_reauthenticates_only_the_session_of_its_own_account(stack, mailbox, tmp_path):
    client = Client(stack)
    address, password_token = verified_account(stack, mailbox, client)
    passkey = Authenticator(tmp_path)
    start = client.call("POST", "/v1/passkeys/registrations", {}, token=password_token).json()
    body = dict(passkey.registration(start, stack.origin), challengeID=start["challengeID"])
    assert client.call("POST", "/v1/passkeys/registrations/finish", body, token=password_token).status == 204
    [added] = notices(mailbox, address, "A passkey was added")
    assert_no_secret(added)
    session_id = age_sessions(stack, password_token, client)

    def reauthenticate(authenticator, token):
        begin = client.call("POST", "/v1/passkeys/authentications", {}).json()
        return client.call(
            "POST", "/v1/session/reauthentication/passkey", authenticator.assertion(begin, stack.origin), token=token)

    # A passkey of another account does not vouch for this session.
    other_client = Client(stack)
    _, other_token = other_client.create_password_account()
    stranger = Authenticator(tmp_path)
    other_start = other_client.call("POST", "/v1/passkeys/registrations", {}, token=other_token).json()
    other_body = dict(stranger.registration(other_start, stack.origin), challengeID=other_start["challengeID"])
    assert other_client.call("POST", "/v1/passkeys/registrations/finish", other_body, token=other_token).status == 204
    assert problem(reauthenticate(stranger, password_token))[:2] == (401, "invalid_credentials")
    assert problem(client.call("DELETE", "/v1/account/password", token=password_token))[:2] == (
        403, "reauthentication_required")

    assert reauthenticate(passkey, password_token).status == 204
    # The replayed assertion's challenge is spent.
    begin = client.call("POST", "/v1/passkeys/authentications", {}).json()
    assertion = passkey.assertion(begin, stack.origin)
    assert client.call("POST", "/v1/session/reauthentication/passkey", assertion, token=password_token).status == 204
    replay = client.call("POST", "/v1/session/reauthentication/passkey", assertion, token=password_token)
    assert replay.status in (401, 410), replay.body
    [[method]] = stack.sql(
        "SELECT detail->>'method' FROM audit_events WHERE type = 'audit.session.reauthenticated' "
        f"AND detail->>'session.id' = '{session_id}' LIMIT 1")
    assert method == "passkey"

    # A signed session's refreshed access token carries the sign-in time: the aged one, then the reauthentication's.
    signed_in = client.call("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD}).json()
    if signed_in.get("refreshToken"):
        issued_at = claims(signed_in["accessToken"])["auth_time"]
        age_sessions(stack, signed_in["accessToken"], client)
        aged = client.call("POST", "/v1/session/refresh", {"refreshToken": signed_in["refreshToken"]}).json()
        assert claims(aged["accessToken"])["auth_time"] <= issued_at - 3000
        assert reauthenticate(passkey, aged["accessToken"]).status == 204
        refreshed = client.call("POST", "/v1/session/refresh", {"refreshToken": aged["refreshToken"]}).json()
        assert claims(refreshed["accessToken"])["auth_time"] >= issued_at


def test_a_password_change_refuses_common_ones_ends_the_other_sessions_and_is_mailed(stack, mailbox):
    client = Client(stack)
    address, token = verified_account(stack, mailbox, client)
    other = client.call("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD}).json()["accessToken"]
    for common in ["password123", "  Password1  ", "iloveyou1"]:
        refused = client.call("POST", "/v1/account/password", {"password": common}, token=token)
        assert problem(refused) == (400, "weak_password", "password_too_common"), common
    assert problem(client.call("POST", "/v1/account/password", {"password": "short"}, token=token))[:2] == (
        400, "invalid_request")
    assert problem(client.call("POST", "/v1/account/password", {"pass": NEW_PASSWORD}, token=token))[0] == 400
    changed = client.call("POST", "/v1/account/password", {"password": NEW_PASSWORD}, token=token)
    assert changed.status == 200, changed.body
    assert changed.json() == {"replaced": True, "sessionsRevoked": 1}
    assert client.call("GET", "/v1/session", token=other).status == 401
    assert client.call("GET", "/v1/session", token=token).status == 200
    assert client.call("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD}).status == 401
    assert client.call("POST", "/v1/sessions/password", {"email": address, "password": NEW_PASSWORD}).status == 200
    [message] = notices(mailbox, address, "password was changed")
    assert_no_secret(message)
    assert [["audit.password.changed"]] == stack.sql(
        "SELECT type FROM audit_events WHERE type = 'audit.password.changed' AND account_id = "
        f"(SELECT account_id FROM account_emails WHERE email = '{address}')")


def test_a_passkey_account_sets_a_password(stack, mailbox, tmp_path):
    client = Client(stack)
    address = f"passkey-first-{uuid.uuid4().hex[:8]}@example.com"
    start = client.call("POST", "/v1/passkeys/account-registrations", {"email": address, "displayName": "Sam"}).json()
    passkey = Authenticator(tmp_path)
    created = client.call("POST", "/v1/passkeys/account-registrations/finish",
                          dict(passkey.registration(start, stack.origin), registrationID=start["registrationID"]))
    assert created.status == 201, created.body
    token = created.json()["accessToken"]
    set_password = client.call("POST", "/v1/account/password", {"password": NEW_PASSWORD}, token=token)
    assert set_password.status == 200 and set_password.json() == {"replaced": False, "sessionsRevoked": 0}
    assert client.call("GET", "/v1/account", token=token).json()["hasPassword"] is True
    assert client.call("POST", "/v1/sessions/password", {"email": address, "password": NEW_PASSWORD}).status == 200


def test_recovery_voids_the_old_password_whichever_way_it_ends(stack, mailbox):
    client = Client(stack)
    # Ended with a new password.
    address, _ = verified_account(stack, mailbox, client)
    assert client.call("POST", "/v1/recovery", {"email": address}).status == 202
    code = mailbox.latest_code(address, count=2)
    recovery = client.call("POST", "/v1/recovery/finish", {"email": address, "code": code}).json()["accessToken"]
    assert problem(client.call("POST", "/v1/recovery/password/finish", {"password": "password123"}, token=recovery)) == (
        400, "weak_password", "password_too_common")
    finished = client.call("POST", "/v1/recovery/password/finish", {"password": NEW_PASSWORD}, token=recovery)
    assert finished.status == 200, finished.body
    session = finished.json()
    assert client.call("GET", "/v1/session", token=session["accessToken"]).json()["authenticationMethod"] == "password"
    assert client.call("GET", "/v1/session", token=recovery).status == 401, "the recovery session ended"
    again = client.call("POST", "/v1/recovery/password/finish", {"password": NEW_PASSWORD}, token=recovery)
    assert again.status == 401
    assert client.call("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD}).status == 401
    assert client.call("POST", "/v1/sessions/password", {"email": address, "password": NEW_PASSWORD}).status == 200
    [message] = notices(mailbox, address, "was recovered")
    assert_no_secret(message)
    # A full session may not finish a recovery.
    refused = client.call("POST", "/v1/recovery/password/finish", {"password": NEW_PASSWORD},
                          token=session["accessToken"])
    assert problem(refused)[:2] == (403, "forbidden")

    # Ended with a passkey: the password is void too.
    address, _ = verified_account(stack, mailbox, client)
    assert client.call("POST", "/v1/recovery", {"email": address}).status == 202
    code = mailbox.latest_code(address, count=2)
    recovery = client.call("POST", "/v1/recovery/finish", {"email": address, "code": code}).json()["accessToken"]
    registered = client.register_passkey(recovery, "/v1/recovery/passkeys/finish")
    assert registered.status == 200, registered.body
    assert client.call("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD}).status == 401
    account = client.call("GET", "/v1/account", token=registered.json()["accessToken"]).json()
    assert account["hasPassword"] is False and account["passkeyCount"] == 1
    notices(mailbox, address, "was recovered")
    notices(mailbox, address, "A passkey was added")


def test_security_notices_reach_every_verified_address_and_hold_no_secret(stack, mailbox, tmp_path):
    client = Client(stack)
    address, token = verified_account(stack, mailbox, client)
    # Removing a passkey, then the password (after a passkey sign-in), each mailed.
    passkey = Authenticator(tmp_path)
    start = client.call("POST", "/v1/passkeys/registrations", {}, token=token).json()
    body = dict(passkey.registration(start, stack.origin), challengeID=start["challengeID"])
    assert client.call("POST", "/v1/passkeys/registrations/finish", body, token=token).status == 204
    spare = client.register_passkey(token, "/v1/passkeys/registrations/finish")
    assert spare.status == 204
    begin = client.call("POST", "/v1/passkeys/authentications", {}).json()
    signed_in = client.call("POST", "/v1/passkeys/authentications/finish", passkey.assertion(begin, stack.origin))
    passkey_token = signed_in.json()["accessToken"]
    [spare_id] = [p["credentialID"] for p in client.call("GET", "/v1/passkeys", token=passkey_token).json()["passkeys"]
                  if p["credentialID"] != base64.urlsafe_b64encode(passkey.credential_id).rstrip(b"=").decode()]
    assert client.call("DELETE", f"/v1/passkeys/{spare_id}", token=passkey_token).status == 204
    assert client.call("DELETE", "/v1/account/password", token=passkey_token).status == 204
    for subject in ["A passkey was removed", "password was removed"]:
        [message] = notices(mailbox, address, subject)
        assert_no_secret(message)
    # Nothing in the outbox row is a secret: no code, sealed or clear, only what the message names.
    rows = stack.sql(
        "SELECT template, code IS NULL AND sealed_code IS NULL, notice::text FROM email_outbox "
        f"WHERE recipient = '{address}' AND template LIKE 'notice_%'")
    assert {row[0] for row in rows} >= {"notice_passkey_added", "notice_passkey_removed", "notice_password_removed"}
    for template, no_code, notice in rows:
        assert no_code == "t", template
        assert set(json.loads(notice)) == {"at", "address", "device"}, notice
    # An unverified address hears nothing.
    unverified_client = Client(stack)
    unverified, fresh = unverified_client.create_password_account()
    mailbox.wait_for(unverified, 1)
    assert unverified_client.call("POST", "/v1/account/recovery-codes", {}, token=fresh).status == 200
    assert not stack.sql(f"SELECT 1 FROM email_outbox WHERE recipient = '{unverified}' AND template LIKE 'notice_%'")


def test_an_operator_forces_a_password_reset(admin_stack, mailbox):  # noqa: F811
    client = Client(admin_stack)
    address, token = verified_account(admin_stack, mailbox, client)
    account = client.call("GET", "/v1/session", token=token).json()["accountID"]
    status, body = admin(admin_stack, "POST", f"/admin/v1/accounts/{account}/password-reset")
    assert status == 200, body
    assert body == {"passwordVoided": True, "sessionsRevoked": 1, "sentTo": address}
    assert client.call("GET", "/v1/session", token=token).status == 401
    assert client.call("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD}).status == 401
    notices(mailbox, address, "password was reset")
    [recovery_mail] = notices(mailbox, address, "recovery code")
    code = recovery_mail["code"]
    recovery = client.call("POST", "/v1/recovery/finish", {"email": address, "code": code})
    assert recovery.status == 200, recovery.body
    finished = client.call("POST", "/v1/recovery/password/finish", {"password": NEW_PASSWORD},
                           token=recovery.json()["accessToken"])
    assert finished.status == 200
    # No verified address: refused, nothing changed.
    unverified_client = Client(admin_stack)
    unverified, other = unverified_client.create_password_account()
    other_account = unverified_client.call("GET", "/v1/session", token=other).json()["accountID"]
    status, body = admin(admin_stack, "POST", f"/admin/v1/accounts/{other_account}/password-reset")
    assert (status, body["code"], body.get("reason")) == (409, "conflict", "no_verified_email"), body
    assert unverified_client.call("GET", "/v1/session", token=other).status == 200
    status, body = admin(admin_stack, "POST", f"/admin/v1/accounts/{uuid.uuid4()}/password-reset")
    assert status == 404, body
    # Disabled and enabled by an operator: both mailed.
    assert admin(admin_stack, "POST", f"/admin/v1/accounts/{account}/disable")[0] == 200
    assert admin(admin_stack, "POST", f"/admin/v1/accounts/{account}/enable")[0] == 200
    for subject in ["account was disabled", "account was enabled"]:
        [message] = notices(mailbox, address, subject)
        assert_no_secret(message)


@pytest.mark.parametrize("window", ["10s", "2d", "later"])
def test_a_bad_reauthentication_window_stops_the_gateway(window, tmp_path):
    from passkey_stack import BIN
    import subprocess
    import os
    result = subprocess.run([BIN / "gateway"], env={**os.environ, "PASSKEY_REAUTHENTICATION_WINDOW": window},
                            capture_output=True, text=True, timeout=20)
    assert result.returncode != 0
    assert "PASSKEY_REAUTHENTICATION_WINDOW" in result.stderr + result.stdout
