"""The admin API on the gateway's admin listener, against the real processes: a support engineer finds an account,
reads it, revokes its sessions and removes a passkey, with every refusal (no token, a malformed, unknown, revoked or
expired one, a missing scope, the public port) and the audit trail that names the token."""

import json
import os
import pathlib
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest

TESTS = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "Support" / "python"))

from passkey_stack import BIN, Stack, free_port  # noqa: E402
from openssl_authenticator import registration_response  # noqa: E402

PASSWORD = "admin suite password"


class Admin:
    """Calls to the admin listener."""

    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def call(self, method, path, token=None, body=None, headers=None):
        request = urllib.request.Request(self.base + path, data=body, method=method)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read()

    def json(self, method, path, token, expect=200):
        status, headers, body = self.call(method, path, token)
        assert status == expect, (status, body)
        return json.loads(body) if body else None


@pytest.fixture(scope="module")
def stack():
    admin_port = free_port()
    # The suite's many sign-ins come from one address: the public per-address limits are off (the admin one stays).
    the_stack = Stack("admin", environment={
        "ADMIN_LISTEN": f"127.0.0.1:{admin_port}", "PASSKEY_TRUSTED_PROXIES": "127.0.0.1",
        # The suite calls the admin API many times a second; the limit itself is tested on a stack of its own.
        "PASSKEY_RATE_LIMIT_ADMIN_PER_ADDRESS": "0",
        "PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL": "0",
        "PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_START_PER_ADDRESS": "0",
        "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_RECOVERY_PER_ADDRESS": "0",
        "PASSKEY_RATE_LIMIT_RECOVERY_PER_EMAIL": "0"}).start()
    the_stack.admin = Admin(admin_port)
    yield the_stack
    exited = the_stack.exited()
    the_stack.stop()
    assert not exited, the_stack.log_text()


def make_token(stack, scopes, *extra):
    result = subprocess.run(
        [BIN / "passkey-admin", "token", "create", "--name", f"test {scopes}", "--scopes", scopes, *extra],
        env={**os.environ, "DATABASE_URL": stack.url, "USER": "admin-suite"}, capture_output=True, text=True,
        check=True)
    return result.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def tokens(stack):
    return {"read": make_token(stack, "read"), "write": make_token(stack, "write"),
            "all": make_token(stack, "read,write,erase")}


def password_account(stack, passkey=True):
    """A password account signed in twice, with a passkey registered: (email, account ID, tokens, credential ID)."""
    address = f"admin-{uuid.uuid4().hex[:12]}@example.com"
    created = stack.request("POST", "/v1/accounts/password",
                            {"email": address, "password": PASSWORD, "displayName": "Ada"})
    assert created.status == 201, created.body
    sessions = []
    for _ in range(2):
        signed_in = stack.request("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD})
        assert signed_in.status == 200, signed_in.body
        sessions.append(signed_in.json()["accessToken"])
    account_id = stack.request("GET", "/v1/session", token=sessions[0]).json()["accountID"]
    credential_id = None
    if passkey:
        start = stack.request("POST", "/v1/passkeys/registrations", {}, token=sessions[0])
        assert start.status == 200, start.body
        body = dict(registration_response(start.json(), stack.origin), challengeID=start.json()["challengeID"])
        finished = stack.request("POST", "/v1/passkeys/registrations/finish", body, token=sessions[0])
        assert finished.status == 204, finished.body
        credential_id = body["credentialID"]
    return address, account_id, sessions, credential_id


def passkey_only_account(stack):
    address = f"admin-{uuid.uuid4().hex[:12]}@example.com"
    start = stack.request("POST", "/v1/passkeys/account-registrations", {"email": address, "displayName": "Grace"})
    assert start.status == 200, start.body
    body = dict(registration_response(start.json(), stack.origin), registrationID=start.json()["registrationID"])
    finished = stack.request("POST", "/v1/passkeys/account-registrations/finish", body)
    assert finished.status == 201, finished.body
    return finished.json()["accountID"], body["credentialID"]


def problem(response):
    status, _, body = response
    return status, json.loads(body)["code"]


def test_every_refusal(stack, tokens):
    admin = stack.admin
    path = f"/admin/v1/accounts/{uuid.uuid4()}"
    status, headers, _ = admin.call("GET", path)
    assert status == 401 and headers.get("WWW-Authenticate", headers.get("www-authenticate")) == "Bearer"
    for bad in ["nonsense", "pkadm_" + "0" * 16 + "_" + "A" * 43, tokens["read"][:-1] + "?"]:
        assert problem(admin.call("GET", path, bad)) == (401, "unauthenticated"), bad
    # Revoked, then expired.
    revoked = make_token(stack, "read")
    token_id = revoked.split("_")[1]
    assert admin.call("GET", path, revoked)[0] == 404
    subprocess.run([BIN / "passkey-admin", "token", "revoke", token_id], env={**os.environ, "DATABASE_URL": stack.url},
                   check=True, capture_output=True)
    assert problem(admin.call("GET", path, revoked)) == (401, "unauthenticated")
    expiring = make_token(stack, "read", "--expires-in", "1s")
    time.sleep(1.2)
    assert problem(admin.call("GET", path, expiring)) == (401, "unauthenticated")
    # A token without the scope.
    assert problem(admin.call("DELETE", f"{path}/sessions", tokens["read"])) == (403, "forbidden")
    assert problem(admin.call("GET", path, tokens["write"])) == (403, "forbidden")
    # The public port has no admin routes, and the admin port no public ones.
    assert stack.request("GET", path, token=tokens["all"]).status == 404
    assert stack.request("GET", "/admin/v1/openapi.json").status == 404
    assert admin.call("GET", "/v1/session", tokens["all"])[0] == 404
    assert admin.call("POST", "/v1/accounts/password", tokens["all"])[0] == 404
    # Bad input is a 400, never a 5xx.
    for bad_path in [f"/admin/v1/accounts/not-a-uuid", "/admin/v1/accounts?email=x&accountID=" + str(uuid.uuid4()),
                     "/admin/v1/accounts?email=not-an-address",
                     "/admin/v1/accounts?credentialID=%%%", "/admin/v1/accounts?nickname=x",
                     "/admin/v1/audit-events?limit=0", "/admin/v1/audit-events?limit=501",
                     "/admin/v1/audit-events?before=abc", "/admin/v1/audit-events?type=" + "t" * 65,
                     "/admin/v1/audit-events?accountID=x", "/admin/v1/audit-events?since=-1",
                     "/admin/v1/audit-events?limit=1&limit=2", "/admin/v1/audit-events?" + "a=b&" * 2000]:
        status, _, body = admin.call("GET", bad_path, tokens["all"])
        assert status == 400, (bad_path, status, body)
    status, _, _ = admin.call("DELETE", f"{path}/sessions", tokens["all"], body=b"{}",
                              headers={"Content-Type": "application/json"})
    assert status == 400
    assert admin.call("GET", path, tokens["all"])[0] == 404
    # Every refusal was logged without the token.
    for token in tokens.values():
        assert token not in stack.log_text()


def test_a_stolen_phone_find_read_revoke_and_remove(stack, tokens):
    admin = stack.admin
    address, account_id, sessions, credential_id = password_account(stack)
    for query in [f"email={address.upper()}", f"accountID={account_id}", f"credentialID={credential_id}"]:
        found = admin.json("GET", f"/admin/v1/accounts?{query}", tokens["read"])["accounts"]
        assert [entry["accountID"] for entry in found] == [account_id], query
        assert found[0]["emails"] == [address] and found[0]["displayName"] == "Ada"
    assert admin.json("GET", "/admin/v1/accounts?email=nobody@example.com", tokens["read"]) == {"accounts": []}

    detail = admin.json("GET", f"/admin/v1/accounts/{account_id}", tokens["read"])
    assert detail["accountID"] == account_id and detail["emails"] == [{"address": address, "verified": False}]
    assert detail["signInMethods"] == ["password", "passkey"]
    assert [passkey["credentialID"] for passkey in detail["passkeys"]] == [credential_id]
    assert len(detail["sessions"]) == 2 and {session["method"] for session in detail["sessions"]} == {"password"}
    assert detail["recoveryCodesRemaining"] == 0

    # One session, then the rest.
    first = stack.request("GET", "/v1/session", token=sessions[0]).json()["sessionID"]
    assert admin.json("DELETE", f"/admin/v1/accounts/{account_id}/sessions/{first}", tokens["write"]) == {"revoked": 1}
    assert stack.request("GET", "/v1/session", token=sessions[0]).status == 401
    assert stack.request("GET", "/v1/session", token=sessions[1]).status == 200
    assert problem(admin.call("DELETE", f"/admin/v1/accounts/{account_id}/sessions/{first}", tokens["write"])) == \
        (404, "not_found")
    assert admin.json("DELETE", f"/admin/v1/accounts/{account_id}/sessions", tokens["write"]) == {"revoked": 1}
    assert stack.request("GET", "/v1/session", token=sessions[1]).status == 401
    assert admin.json("DELETE", f"/admin/v1/accounts/{account_id}/sessions", tokens["write"]) == {"revoked": 0}

    # The passkey goes (the password remains), once.
    status, _, _ = admin.call("DELETE", f"/admin/v1/accounts/{account_id}/passkeys/{credential_id}", tokens["write"])
    assert status == 204
    assert problem(admin.call("DELETE", f"/admin/v1/accounts/{account_id}/passkeys/{credential_id}",
                              tokens["write"])) == (404, "not_found")
    assert admin.json("GET", f"/admin/v1/accounts/{account_id}", tokens["read"])["passkeys"] == []

    # The audit trail names the token for each change, and the reads of the account.
    token_id = tokens["write"].split("_")[1]
    page = admin.json("GET", f"/admin/v1/audit-events?accountID={account_id}", tokens["read"])["events"]
    admin_events = [(event["type"], event["actorID"]) for event in reversed(page) if event["actor"] == "admin"]
    changes = [entry for entry in admin_events if entry[0] != "audit.admin.account_viewed"]
    assert changes == [("audit.session.revoked", token_id), ("audit.session.revoked", token_id),
                       ("audit.passkey.removed", token_id)], admin_events
    viewed = [entry for entry in admin_events if entry[0] == "audit.admin.account_viewed"]
    assert viewed and all(actor == tokens["read"].split("_")[1] for _, actor in viewed)
    revoked_ids = {event["detail"]["session.id"] for event in page
                   if event["type"] == "audit.session.revoked" and event["actor"] == "admin"}
    assert first in revoked_ids and len(revoked_ids) == 2
    assert all(event["accountID"] == account_id for event in page)
    user_events = [event["type"] for event in reversed(page) if event["actor"] == "user"]
    assert user_events[:2] == ["audit.account.created", "audit.email.verification_sent"], user_events


def test_the_last_passkey_goes_only_with_the_override_which_is_audited(stack, tokens):
    admin = stack.admin
    account_id, credential_id = passkey_only_account(stack)
    path = f"/admin/v1/accounts/{account_id}/passkeys/{credential_id}"
    assert problem(admin.call("DELETE", path, tokens["write"])) == (409, "last_sign_in_method")
    assert problem(admin.call("DELETE", path + "?override=yes", tokens["write"])) == (400, "invalid_request")
    assert admin.call("DELETE", path + "?override=lastSignInMethod", tokens["write"])[0] == 204
    events = admin.json("GET", f"/admin/v1/audit-events?accountID={account_id}&type=audit.passkey.removed",
                        tokens["read"])["events"]
    assert len(events) == 1 and events[0]["detail"]["override"] == "last_sign_in_method"
    assert events[0]["actor"] == "admin"


def test_audit_pages_and_filters(stack, tokens):
    admin = stack.admin
    _, account_id, _, _ = password_account(stack, passkey=False)
    everything = admin.json("GET", f"/admin/v1/audit-events?accountID={account_id}", tokens["read"])["events"]
    ids = [event["id"] for event in everything]
    assert ids == sorted(ids, reverse=True) and len(ids) >= 4
    # Each read is itself an event (audit.admin.audit_read), newer than the page: pages are pinned with before.
    again = admin.json("GET", f"/admin/v1/audit-events?accountID={account_id}&limit=1", tokens["read"])["events"]
    assert again[0]["type"] == "audit.admin.audit_read" and again[0]["actor"] == "admin" and again[0]["id"] > ids[0]
    first = admin.json("GET", f"/admin/v1/audit-events?accountID={account_id}&limit=2&before={ids[0] + 1}",
                       tokens["read"])
    assert [event["id"] for event in first["events"]] == ids[:2] and first["nextBefore"] == ids[1]
    second = admin.json("GET", f"/admin/v1/audit-events?accountID={account_id}&limit=2&before={first['nextBefore']}",
                        tokens["read"])
    assert [event["id"] for event in second["events"]] == ids[2:4]
    signins = admin.json("GET", f"/admin/v1/audit-events?accountID={account_id}&type=audit.sign_in.succeeded",
                         tokens["read"])["events"]
    assert len(signins) == 2 and {event["detail"]["method"] for event in signins} == {"password"}
    future = int(time.time() * 1000) + 3_600_000
    assert admin.json("GET", f"/admin/v1/audit-events?accountID={account_id}&since={future}",
                      tokens["read"])["events"] == []


def test_the_document_is_served_on_the_admin_listener_and_every_operation_in_it_is_routed(stack):
    status, headers, body = stack.admin.call("GET", "/admin/v1/openapi.json")
    assert status == 200
    document = json.loads(body)
    assert document["openapi"].startswith("3.1")
    operations = [(method.upper(), path) for path, item in document["paths"].items() for method in item]
    assert len(operations) == 21, "18 account, audit and webhook operations and the three of the signing keys"
    for method, path in operations:
        concrete = path.replace("{accountID}", str(uuid.uuid4())).replace("{sessionID}", str(uuid.uuid4())) \
            .replace("{credentialID}", "AAAA").replace("{webhookID}", str(uuid.uuid4())).replace("{keyID}", "kid")
        status, _, _ = stack.admin.call(method, concrete)
        assert status == (200 if path.endswith("openapi.json") else 401), (method, path, status)


def rows_naming(stack, needles):
    """Every row of every table of the stack's database whose text form contains one of `needles`, as
    (table, row text)."""
    import psycopg
    found = []
    with psycopg.connect(stack.url, autocommit=True) as connection:
        tables = [name for (name,) in connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")]
        for table in tables:
            for (text,) in connection.execute(f"SELECT t::text FROM {table} t"):
                if any(needle.lower() in text.lower() for needle in needles):
                    found.append((table, text))
    return found


def test_erase_leaves_no_row_that_names_the_account_but_its_tombstone(stack, tokens):
    admin = stack.admin
    address, account_id, sessions, credential_id = password_account(stack)
    # Mail queued to its address, recovery codes and a recovery in flight: more rows that name it.
    assert stack.request("POST", "/v1/account/recovery-codes", {}, token=sessions[1]).status == 200
    assert stack.request("POST", "/v1/recovery", {"email": address}).status == 202
    handle = stack.request("GET", "/v1/account", token=sessions[1]).json().get("userHandle")
    credential_hex = __import__("base64").urlsafe_b64decode(credential_id + "==").hex()
    needles = [account_id, address, credential_hex] + ([handle] if handle else [])
    before = rows_naming(stack, needles)
    assert {table for table, _ in before} >= {"accounts", "account_emails", "password_credentials",
                                               "passkey_credentials", "authentication_sessions", "recovery_codes",
                                               "email_outbox", "audit_events"}, before

    # Only the erase scope may.
    assert problem(admin.call("DELETE", f"/admin/v1/accounts/{account_id}", tokens["write"])) == (403, "forbidden")
    status, _, body = admin.call("DELETE", f"/admin/v1/accounts/{account_id}", tokens["all"])
    assert status == 204, body
    left = rows_naming(stack, needles)
    assert len(left) == 1 and left[0][0] == "audit_events", left
    tombstone = admin.json("GET", f"/admin/v1/audit-events?accountID={account_id}", tokens["read"])["events"]
    assert [(event["type"], event["actor"], event["actorID"]) for event in tombstone] == \
        [("audit.account.erased", "admin", tokens["all"].split("_")[1])]
    assert tombstone[0]["clientAddress"] is None or tombstone[0]["clientAddress"] == "127.0.0.1"
    assert tombstone[0]["detail"] == {}
    # Gone for every purpose: its sessions, its password, a second erase.
    assert stack.request("GET", "/v1/session", token=sessions[1]).status == 401
    assert stack.request("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD}).status == 401
    assert problem(admin.call("DELETE", f"/admin/v1/accounts/{account_id}", tokens["all"])) == (404, "not_found")
    assert admin.call("GET", f"/admin/v1/accounts/{account_id}", tokens["read"])[0] == 404


def test_disable_while_a_session_is_in_use_then_enable(stack, tokens, tmp_path):
    from openssl_authenticator import Authenticator
    admin = stack.admin
    address, account_id, sessions, _ = password_account(stack, passkey=False)
    # A passkey that really signs, for the passkey sign-in.
    authenticator = Authenticator(tmp_path)
    start = stack.request("POST", "/v1/passkeys/registrations", {}, token=sessions[0])
    body = dict(authenticator.registration(start.json(), stack.origin), challengeID=start.json()["challengeID"])
    assert stack.request("POST", "/v1/passkeys/registrations/finish", body, token=sessions[0]).status == 204

    def passkey_sign_in():
        begun = stack.request("POST", "/v1/passkeys/authentications", {})
        assert begun.status == 200, begun.body
        return stack.request("POST", "/v1/passkeys/authentications/finish",
                             authenticator.assertion(begun.json(), stack.origin))

    assert passkey_sign_in().status == 200
    assert stack.request("GET", "/v1/account", token=sessions[0]).status == 200

    assert problem(admin.call("POST", f"/admin/v1/accounts/{account_id}/disable", tokens["read"])) == \
        (403, "forbidden")
    disabled = admin.json("POST", f"/admin/v1/accounts/{account_id}/disable", tokens["write"])
    assert disabled == {"disabled": True, "changed": True, "sessionsRevoked": 3}
    # Every session ends at once, in use or not.
    for token in sessions:
        assert stack.request("GET", "/v1/account", token=token).status == 401
    # No way in: the right password and a valid passkey are told why; a wrong password learns nothing.
    refused = stack.request("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD})
    assert (refused.status, refused.json()["code"]) == (403, "account_disabled")
    wrong = stack.request("POST", "/v1/sessions/password", {"email": address, "password": "not the password"})
    assert (wrong.status, wrong.json()["code"]) == (401, "invalid_credentials")
    by_passkey = passkey_sign_in()
    assert (by_passkey.status, by_passkey.json()["code"]) == (403, "account_disabled")
    # Recovery answers as for any address, and issues nothing.
    assert stack.request("POST", "/v1/recovery", {"email": address}).status == 202
    detail = admin.json("GET", f"/admin/v1/accounts/{account_id}", tokens["read"])
    assert detail["disabledAt"] and detail["sessions"] == []
    again = admin.json("POST", f"/admin/v1/accounts/{account_id}/disable", tokens["write"])
    assert again == {"disabled": True, "changed": False, "sessionsRevoked": 0}

    enabled = admin.json("POST", f"/admin/v1/accounts/{account_id}/enable", tokens["write"])
    assert enabled == {"disabled": False, "changed": True, "sessionsRevoked": 0}
    assert stack.request("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD}).status == 200
    assert passkey_sign_in().status == 200
    assert admin.json("GET", f"/admin/v1/accounts/{account_id}", tokens["read"])["disabledAt"] is None
    events = admin.json("GET", f"/admin/v1/audit-events?accountID={account_id}&type=audit.account.disabled"
                        f"&type=audit.account.enabled", tokens["read"])["events"]
    assert [event["type"] for event in reversed(events)] == ["audit.account.disabled", "audit.account.enabled"]
    assert problem(admin.call("POST", f"/admin/v1/accounts/{uuid.uuid4()}/disable", tokens["write"])) == \
        (404, "not_found")


def test_admin_calls_are_limited_per_client_address(tokens):
    admin_port = free_port()
    limited = Stack("adminlimit", environment={"ADMIN_LISTEN": f"127.0.0.1:{admin_port}",
                                               "PASSKEY_RATE_LIMIT_ADMIN_PER_ADDRESS": "3/m"}).start()
    try:
        admin = Admin(admin_port)
        path = f"/admin/v1/accounts/{uuid.uuid4()}"
        # A burst of 10 (the least any limit allows), then a call every 20 s.
        statuses = [admin.call("GET", path, "pkadm_" + "0" * 16 + "_" + "A" * 43)[0] for _ in range(12)]
        assert statuses[:10] == [401] * 10 and statuses[10:] == [429, 429], statuses
        status, headers, _ = admin.call("GET", path)
        assert status == 429 and "retry-after" in {name.lower() for name in headers}
    finally:
        limited.stop()


def test_accounts_are_listed_a_page_at_a_time_with_filters_and_found_by_external_id(stack, tokens):
    admin = stack.admin
    started = int(time.time() * 1000) - 1
    created = []
    for _ in range(3):
        created.append(password_account(stack, passkey=False)[1])
    passkey_only, _ = passkey_only_account(stack)
    created.append(passkey_only)
    # Two pages of two, oldest first, covering exactly the four new accounts.
    first = admin.json("GET", f"/admin/v1/accounts?createdSince={started}&limit=2", tokens["read"])
    assert [a["accountID"] for a in first["accounts"]] == created[:2] and "nextAfter" in first
    second = admin.json("GET", f"/admin/v1/accounts?createdSince={started}&limit=2&after={first['nextAfter']}",
                        tokens["read"])
    assert [a["accountID"] for a in second["accounts"]] == created[2:]
    third = admin.json("GET", f"/admin/v1/accounts?createdSince={started}&limit=2&after={second['nextAfter']}",
                       tokens["read"])
    assert third == {"accounts": []}
    summary = second["accounts"][1]
    assert summary["hasPassword"] is False and summary["passkeyCount"] == 1 and summary["disabledAt"] is None
    # Filters: without a password, then disabled.
    no_password = admin.json("GET", f"/admin/v1/accounts?createdSince={started}&hasPassword=false", tokens["read"])
    assert [a["accountID"] for a in no_password["accounts"]] == [passkey_only]
    assert admin.json("POST", f"/admin/v1/accounts/{created[0]}/disable", tokens["write"])["changed"] is True
    disabled = admin.json("GET", f"/admin/v1/accounts?createdSince={started}&disabled=true", tokens["read"])
    assert [a["accountID"] for a in disabled["accounts"]] == [created[0]]
    enabled = admin.json("GET", f"/admin/v1/accounts?createdSince={started}&disabled=false&hasPasskey=false",
                         tokens["read"])
    assert [a["accountID"] for a in enabled["accounts"]] == created[1:3]
    until = admin.json("GET", f"/admin/v1/accounts?createdUntil={started}&createdSince={started - 1}", tokens["read"])
    assert all(a["accountID"] not in created for a in until["accounts"])
    # Refusals: a lookup mixed with listing, a bad filter, a cursor the API never gave, a limit out of range.
    for query in ["email=a@example.com&limit=2", "disabled=yes", "after=nonsense", "after=1_not-a-uuid-at-all",
                  "limit=201", "limit=0", "hasPassword=true&hasPassword=false"]:
        assert problem(admin.call("GET", f"/admin/v1/accounts?{query}", tokens["read"])) == (
            400, "invalid_request"), query
    # An imported account is found by its external ID, and its detail names where it came from.
    external = f"crm-{uuid.uuid4().hex[:10]}"
    address = f"imported-{uuid.uuid4().hex[:8]}@example.com"
    imported = subprocess.run(
        [BIN / "passkey-import", "--format", "jsonl", "-"],
        input=json.dumps({"email": address, "displayName": "Imported", "externalID": external}) + "\n",
        env={**os.environ, "DATABASE_URL": stack.url}, capture_output=True, text=True, timeout=60)
    assert imported.returncode == 0, imported.stderr
    found = admin.json("GET", f"/admin/v1/accounts?externalID={external}", tokens["read"])["accounts"]
    assert len(found) == 1 and found[0]["externalID"] == external and found[0]["emails"] == [address]
    detail = admin.json("GET", f"/admin/v1/accounts/{found[0]['accountID']}", tokens["read"])
    assert detail["importOrigin"] == {"externalID": external}
    assert admin.json("GET", f"/admin/v1/accounts/{created[1]}", tokens["read"])["importOrigin"] is None
    assert admin.json("GET", "/admin/v1/accounts?externalID=no-such-id", tokens["read"]) == {"accounts": []}
