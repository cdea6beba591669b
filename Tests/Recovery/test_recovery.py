"""Email verification, recovery by email code and by recovery code, the recovery session's limits, and the outbox,
against the real executables and a real SMTP server."""

import ipaddress
import json
import time
import uuid

from conftest import Client

def problem(response):
    document = response.json()
    return response.status, document["code"], document.get("detail")


def verified_account(stack, mailbox, client):
    """A password account whose email is verified, and a session of it."""
    address, token = client.create_password_account()
    code = mailbox.latest_code(address)
    verified = client.call("POST", "/v1/account/email/verify", {"code": code}, token=token)
    assert verified.status == 204, verified.body
    return address, token


def test_a_new_account_gets_a_verification_code_and_confirms_it(stack, mailbox):
    client = Client(stack)
    address, token = client.create_password_account()
    [message] = mailbox.wait_for(address)
    assert message["recipients"] == [address]
    assert message["envelope_from"] == "no-reply@passkey.test"
    assert "Recovery Suite" in message["subject"] and message["code"] in message["subject"]
    assert "expires in 10 minutes" in message["body"] and "Recovery Suite" in message["body"]
    account = client.call("GET", "/v1/account", token=token).json()
    assert account["emailVerified"] is False and account["verifiedEmails"] == []

    wrong = "00000000" if message["code"] != "00000000" else "11111111"
    assert problem(client.call("POST", "/v1/account/email/verify", {"code": wrong}, token=token))[:2] == (
        400, "invalid_code")
    for malformed in ["1234567", "123456789", "12345a78", 12345678, None]:
        refused = client.call("POST", "/v1/account/email/verify", {"code": malformed}, token=token)
        assert problem(refused)[:2] == (400, "invalid_request"), malformed
    assert client.call("POST", "/v1/account/email/verify", {"code": message["code"]}, token=token).status == 204
    account = client.call("GET", "/v1/account", token=token).json()
    assert account["emailVerified"] is True and account["verifiedEmails"] == [address]
    # Verified already: asking again sends nothing.
    assert client.call("POST", "/v1/account/email/verification", token=token).status == 202
    time.sleep(1.5)
    assert len(mailbox.to(address)) == 1


def test_a_passkey_account_is_sent_a_verification_code_and_a_resend_replaces_it(stack, mailbox):
    client = Client(stack)
    address = client.create_passkey_account()
    first = mailbox.latest_code(address)
    assert first is not None
    # Not verified, so it cannot recover the account by email: the start answers alike and sends nothing.
    assert client.call("POST", "/v1/recovery", {"email": address}).status == 202
    time.sleep(1.5)
    assert len(mailbox.to(address)) == 1
    assert problem(client.call("POST", "/v1/recovery/finish", {"email": address, "code": first}))[:2] == (
        400, "invalid_code")


def test_recovery_by_email_code_gives_a_recovery_session_that_can_only_register_a_passkey(stack, mailbox):
    client = Client(stack)
    address, old_token = verified_account(stack, mailbox, client)
    account_id = client.call("GET", "/v1/session", token=old_token).json()["accountID"]

    assert client.call("POST", "/v1/recovery", {"email": address}).status == 202
    code = mailbox.latest_code(address, count=2)
    finished = client.call("POST", "/v1/recovery/finish", {"email": address, "code": code})
    assert finished.status == 200, finished.body
    recovery = finished.json()
    assert recovery["authenticationMethod"] == "recovery" and recovery["accountID"] == account_id
    token = recovery["accessToken"]

    # The account's other sessions were revoked (the default).
    assert client.call("GET", "/v1/session", token=old_token).status == 401
    # Everything but the passkey registration refuses the recovery session.
    for method, path, body in [
        ("GET", "/v1/session", None), ("GET", "/v1/sessions", None),
        ("GET", "/v1/account", None), ("GET", "/v1/passkeys", None), ("POST", "/v1/account/recovery-codes", {}),
        ("POST", "/v1/account/email/verification", {}), ("POST", "/v1/account/email/verify", {"code": "12345678"}),
        ("DELETE", f"/v1/sessions/{uuid.uuid4()}", None), ("PATCH", "/v1/account", {"displayName": "Recovered"}),
    ]:
        refused = client.call(method, path, body, token=token)
        assert problem(refused) == (403, "forbidden", "A recovery session can only register a new passkey."), path
    refused = client.register_passkey(token, "/v1/passkeys/registrations/finish")
    assert problem(refused)[:2] == (403, "forbidden")
    conditional = client.call("POST", "/v1/passkeys/registrations", {"mode": "conditional"}, token=token)
    assert problem(conditional)[:2] == (403, "forbidden")

    registered = client.register_passkey(token, "/v1/recovery/passkeys/finish")
    assert registered.status == 200, registered.body
    session = registered.json()
    assert session["accountID"] == account_id and "authenticationMethod" not in session
    # The recovery session has ended; the new one is a normal passkey session.
    assert client.call("GET", "/v1/session", token=token).status == 401
    current = client.call("GET", "/v1/session", token=session["accessToken"]).json()
    assert current["authenticationMethod"] == "passkey"
    assert client.call("GET", "/v1/account", token=session["accessToken"]).json()["passkeyCount"] == 1
    # A full session may not use the recovery-only finish.
    again = client.register_passkey(session["accessToken"], "/v1/recovery/passkeys/finish")
    assert problem(again)[:2] == (403, "forbidden")

    logs = stack.log_text()
    for event in ["audit.recovery.started", "audit.recovery.session_issued", "audit.recovery.completed",
                  "audit.email.verified"]:
        assert f"{event} " in logs or f"event={event}" in logs or event in logs, event
    assert code not in logs, "codes are never logged"


def test_a_recovery_session_can_sign_itself_out(stack, mailbox):
    client = Client(stack)
    address, token = client.create_password_account()
    codes = client.call("POST", "/v1/account/recovery-codes", token=token).json()["codes"]
    recovery = client.call("POST", "/v1/recovery/finish", {"email": address, "recoveryCode": codes[0]})
    assert recovery.status == 200, recovery.body
    recovery_token = recovery.json()["accessToken"]
    session_id = recovery.json()["sessionID"]
    assert client.call("DELETE", "/v1/session", token=recovery_token).status == 204
    # Ended at once: it can no longer start its passkey registration, and the row is revoked.
    assert problem(client.call("POST", "/v1/passkeys/registrations", {}, token=recovery_token))[:2] == (
        401, "unauthenticated")
    assert stack.sql(f"SELECT revoked_at IS NOT NULL FROM authentication_sessions WHERE id = '{session_id}'") == [["t"]]
    assert problem(client.call("DELETE", "/v1/session", token=recovery_token))[:2] == (401, "unauthenticated")


def test_codes_are_used_once_expire_and_allow_five_attempts(stack, mailbox):
    # Each case on an address of its own: the per-email limit (bursts of 10) counts starts and finishes alike.
    client = Client(stack)

    def recovery_code(address, count):
        assert client.call("POST", "/v1/recovery", {"email": address}).status == 202
        return mailbox.latest_code(address, count=count)

    def finish(address, code):
        return client.call("POST", "/v1/recovery/finish", {"email": address, "code": code})

    def wrong(code):
        return "%08d" % ((int(code) + 1) % 100_000_000)

    # Five attempts, right or wrong: after four wrong ones the right code still works, as the fifth; then once only.
    address, _ = verified_account(stack, mailbox, client)
    code = recovery_code(address, 2)
    for _ in range(4):
        assert problem(finish(address, wrong(code)))[:2] == (400, "invalid_code")
    assert finish(address, code).status == 200
    assert problem(finish(address, code))[:2] == (400, "invalid_code"), "used once"

    # Five wrong attempts use a code up.
    address, _ = verified_account(stack, mailbox, client)
    code = recovery_code(address, 2)
    for _ in range(5):
        assert problem(finish(address, wrong(code)))[:2] == (400, "invalid_code")
    assert problem(finish(address, code))[:2] == (400, "invalid_code"), "no sixth attempt"

    # A code sent to one account's address does not work with another's; a new code replaces the one before.
    address, _ = verified_account(stack, mailbox, client)
    other, _ = verified_account(stack, mailbox, client)
    code = recovery_code(address, 2)
    assert problem(finish(other, code))[:2] == (400, "invalid_code")
    newer = recovery_code(address, 3)
    if newer != code:
        assert problem(finish(address, code))[:2] == (400, "invalid_code"), "replaced"

    # Expired: the database's clock decides.
    stack.sql(f"UPDATE email_codes SET created_at = now() - interval '11 minutes', "
                f"expires_at = now() - interval '1 minute' WHERE consumed_at IS NULL")
    assert problem(finish(address, newer))[:2] == (400, "invalid_code"), "expired"

    # Only salted digests are stored, and a sent message keeps no code.
    assert stack.sql("SELECT count(*) FROM email_codes WHERE octet_length(code_digest) <> 32") == [["0"]]
    assert stack.sql("SELECT count(*) FROM email_outbox WHERE code IS NOT NULL AND sent_at IS NOT NULL") == [["0"]]


def test_answers_reveal_nothing_about_which_accounts_exist(stack, mailbox):
    client = Client(stack)
    known, _ = verified_account(stack, mailbox, client)
    unknown = f"nobody-{uuid.uuid4().hex[:12]}@example.com"
    unverified = client.create_passkey_account()

    starts = [client.call("POST", "/v1/recovery", {"email": email}) for email in (known, unknown, unverified)]
    assert [s.status for s in starts] == [202, 202, 202]
    assert len({s.body for s in starts}) == 1
    known_code = mailbox.latest_code(known, count=2)
    wrong = "%08d" % ((int(known_code) + 1) % 100_000_000)
    failures = [client.call("POST", "/v1/recovery/finish", {"email": email, "code": wrong})
                for email in (known, unknown, unverified)]
    failures.append(client.call("POST", "/v1/recovery/finish",
                                {"email": unknown, "recoveryCode": "ABCD-EFGH-JKMN-PQRS"}))
    assert len({(f.status, f.body) for f in failures}) == 1, [f.body for f in failures]
    assert problem(failures[0])[:2] == (400, "invalid_code")
    # A malformed request is refused for its shape, before anything is looked up.
    for body in [{"email": unknown}, {"email": unknown, "code": "1234"},
                 {"email": unknown, "code": "12345678", "recoveryCode": "ABCD-EFGH-JKMN-PQRS"},
                 {"email": "not an address", "code": "12345678"}, {"email": unknown, "recoveryCode": "UUUU"}]:
        assert problem(client.call("POST", "/v1/recovery/finish", body))[:2] == (400, "invalid_request"), body


def test_a_flood_of_starts_is_limited_alike_for_known_and_unknown_addresses(stack, mailbox):
    known, _ = verified_account(stack, mailbox, Client(stack))
    unknown = f"nobody-{uuid.uuid4().hex[:12]}@example.com"
    # Each from addresses of its own, so only the per-email limit (a burst of 10) meets them.
    known_statuses = [Client(stack).call("POST", "/v1/recovery", {"email": known}).status for _ in range(12)]
    unknown_statuses = [Client(stack).call("POST", "/v1/recovery", {"email": unknown.upper()}).status
                        for _ in range(12)]
    assert known_statuses == unknown_statuses == [202] * 10 + [429] * 2
    limited = Client(stack).call("POST", "/v1/recovery/finish", {"email": unknown, "code": "12345678"})
    assert problem(limited)[:2] == (429, "rate_limited") and limited.headers["Retry-After"]
    # One client address flooding many addresses meets its own limit (a burst of 60 in this stack).
    flooder = Client(stack)
    statuses = [flooder.call("POST", "/v1/recovery", {"email": f"flood-{i}@example.com"}).status for i in range(62)]
    assert statuses[:60] == [202] * 60 and statuses[60:] == [429, 429]
    # Ten codes were queued for the known address, and no more.
    time.sleep(1.5)
    assert len(mailbox.wait_for(known, count=11)) == 11


def test_recovery_codes_are_shown_once_work_once_and_are_replaced(stack, mailbox):
    client = Client(stack)
    address, token = client.create_password_account()
    other, other_token = client.create_password_account()
    generated = client.call("POST", "/v1/account/recovery-codes", token=token)
    assert generated.status == 200
    codes = generated.json()["codes"]
    assert len(codes) == 10 and len(set(codes)) == 10
    assert client.call("GET", "/v1/account", token=token).json()["recoveryCodesRemaining"] == 10
    stored = stack.sql("SELECT code_digest FROM recovery_codes")
    assert all(code.replace("-", "") not in str(stored) for code in codes), "only digests are stored"

    replaced = client.call("POST", "/v1/account/recovery-codes", token=token).json()["codes"]
    assert set(replaced).isdisjoint(codes)
    assert problem(client.call("POST", "/v1/recovery/finish", {"email": address, "recoveryCode": codes[0]}))[:2] == (
        400, "invalid_code"), "the earlier set no longer works"
    # Another account's code does not work for this one.
    foreign = client.call("POST", "/v1/account/recovery-codes", token=other_token).json()["codes"]
    assert problem(client.call("POST", "/v1/recovery/finish", {"email": address, "recoveryCode": foreign[0]}))[:2] == (
        400, "invalid_code")

    # Any case and spacing; an unverified email is fine as the account's name here.
    typed = replaced[3].lower().replace("-", " ")
    finished = client.call("POST", "/v1/recovery/finish", {"email": address, "recoveryCode": typed})
    assert finished.status == 200, finished.body
    assert finished.json()["authenticationMethod"] == "recovery"
    assert client.call("GET", "/v1/account", token=finished.json()["accessToken"]).status == 403
    assert problem(client.call("POST", "/v1/recovery/finish", {"email": address, "recoveryCode": typed}))[:2] == (
        400, "invalid_code"), "used once"
    registered = client.register_passkey(finished.json()["accessToken"], "/v1/recovery/passkeys/finish")
    assert registered.status == 200
    summary = client.call("GET", "/v1/account", token=registered.json()["accessToken"]).json()
    assert summary["recoveryCodesRemaining"] == 9 and summary["passkeyCount"] == 1


def test_a_relay_that_is_down_fails_no_request_and_its_mail_goes_out_later(stack, mailbox):
    client = Client(stack)
    address, _ = verified_account(stack, mailbox, client)
    mailbox.stop()
    try:
        assert client.call("POST", "/v1/recovery", {"email": address}).status == 202
        newcomer, token = client.create_password_account()
        time.sleep(2.5)
        pending = stack.sql(f"SELECT attempts, last_error IS NOT NULL FROM email_outbox "
                              f"WHERE recipient = '{newcomer}' AND sent_at IS NULL")
        assert pending and int(pending[0][0]) >= 1 and pending[0][1] == "t", pending
    finally:
        mailbox.start()
    code = mailbox.latest_code(address, count=2)
    assert client.call("POST", "/v1/recovery/finish", {"email": address, "code": code}).status == 200
    assert mailbox.wait_for(newcomer, timeout=30)[0]["code"]


def test_the_outbox_survives_a_kill_and_sends_nothing_twice_after_acknowledgement(stack, mailbox):
    client = Client(stack)
    mailbox.delay = 0.25
    try:
        addresses = [client.create_password_account()[0] for _ in range(16)]
        mailbox.wait_for(addresses[2], timeout=30)
        stack.kill("session-service")
        killed_at = time.monotonic()
    finally:
        mailbox.delay = 0.0
    recipients = "', '".join(addresses)
    rows = stack.sql(f"SELECT id, sent_at IS NOT NULL FROM email_outbox WHERE recipient IN ('{recipients}')")
    assert len(rows) == 16, "every message was queued with its account"
    acknowledged = {row[0] for row in rows if row[1] == "t"}
    assert 0 < len(acknowledged) < 16, "killed in the middle of the outbox"
    stack.restart("session-service")
    for address in addresses:
        mailbox.wait_for(address, timeout=30)
    time.sleep(1.5)
    delivered = [m["message_id"].strip("<>").split("@")[0] for address in addresses for m in mailbox.to(address)]
    assert set(delivered) == {row[0] for row in rows}, "nothing lost"
    for outbox_id in acknowledged:
        assert delivered.count(outbox_id) == 1, "a message acknowledged before the kill was sent again"
    # Only the message in flight at the kill may arrive twice (the relay took it, the commit did not happen).
    duplicates = [i for i in set(delivered) if delivered.count(i) > 1]
    assert len(duplicates) <= 1, duplicates
    assert stack.sql(f"SELECT count(*) FROM email_outbox WHERE recipient IN ('{recipients}') AND sent_at IS NULL") \
        == [["0"]]
    assert time.monotonic() - killed_at < 60


def test_recovery_keeps_the_other_sessions_when_so_configured(mailbox):
    from conftest import Stack
    stack = Stack({
        "SMTP_URL": f"smtp://127.0.0.1:{mailbox.port}", "SMTP_STARTTLS": "off",
        "PASSKEY_RECOVERY_REVOKES_SESSIONS": "false",
    }).start()
    try:
        client = Client(stack)
        address, token = verified_account(stack, mailbox, client)
        codes = client.call("POST", "/v1/account/recovery-codes", token=token).json()["codes"]
        first = client.call("POST", "/v1/recovery/finish", {"email": address, "recoveryCode": codes[0]})
        assert first.status == 200
        assert client.call("GET", "/v1/session", token=token).status == 200, "the password session stays"
        # An earlier recovery session always ends when a new one starts.
        second = client.call("POST", "/v1/recovery/finish", {"email": address, "recoveryCode": codes[1]})
        assert second.status == 200
        start = client.call("POST", "/v1/passkeys/registrations", {}, token=first.json()["accessToken"])
        assert problem(start)[:2] == (401, "unauthenticated")
        assert client.call("GET", "/v1/session", token=token).status == 200
    finally:
        stack.stop()


def test_every_change_is_in_the_stored_audit_trail_with_its_request_and_client_address(stack, mailbox):
    """audit_events holds one row per change, written by the service that made it in the change's own transaction:
    the request ID the caller sent and the client address the gateway saw; a refused attempt leaves no row."""
    client = Client(stack)
    address, token = verified_account(stack, mailbox, client)
    account_id = client.call("GET", "/v1/session", token=token).json()["accountID"]
    # A wrong code changes nothing and is stored nowhere.
    assert client.call("POST", "/v1/recovery", {"email": address}).status == 202
    wrong = client.call("POST", "/v1/recovery/finish", {"email": address, "code": "00000000"})
    assert wrong.status in (400, 401, 403, 410), wrong.body
    code = mailbox.latest_code(address, count=2)
    request_id = f"audit-{uuid.uuid4().hex[:12]}"
    finished = stack.request("POST", "/v1/recovery/finish", {"email": address, "code": code},
                             client_address=client.address, headers={"X-Request-ID": request_id})
    assert finished.status == 200, finished.body
    registered = client.register_passkey(finished.json()["accessToken"], "/v1/recovery/passkeys/finish")
    assert registered.status == 200, registered.body

    rows = stack.sql(f"""SELECT type, actor, coalesce(actor_id, ''), coalesce(request_id, ''),
                                  coalesce(client_address, ''), detail::text
                           FROM audit_events WHERE account_id = '{account_id}' ORDER BY id""")
    types = [row[0] for row in rows]
    assert types == ["audit.account.created", "audit.email.verification_sent", "audit.sign_in.succeeded",
                     "audit.email.verified", "audit.recovery.started", "audit.recovery.session_issued",
                     "audit.passkey.registered", "audit.recovery.completed", "audit.password.removed"], types
    # The completed recovery voided the password.
    assert json.loads(rows[-1][5]) == {"reason": "recovery"}
    assert all(row[1] == "user" and row[2] == "" for row in rows), rows
    # The gateway stores the address in its canonical form.
    assert [row for row in rows if row[4] != str(ipaddress.ip_address(client.address))] == []
    assert all(row[3] for row in rows), "every change names the request that made it"
    issued = rows[types.index("audit.recovery.session_issued")]
    assert issued[3] == request_id
    detail = json.loads(issued[5])
    assert detail["proof"] == "email_code" and set(detail) == {"proof", "session.id"}
    assert code not in "".join(row[5] for row in rows), "codes are never stored"
