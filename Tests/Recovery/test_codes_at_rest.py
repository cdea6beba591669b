"""No one-time code is readable from the database (M5 of the 2026-12-07 review): with only what a read-only role sees
(a replica, a backup, an analytics role), neither email_outbox nor email_codes gives a code away; the code arrives by
mail all the same and recovers the account. What the rows hold is the construction docs/security.md describes, which
only the key ring (the stack's PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE) opens. Rows written before codes were sealed
(migration 0018) are still sent and checked until they expire."""

import hashlib
import json
import os
import time

import pytest
from cryptography.exceptions import InvalidTag

from conftest import PASSWORD, Client, Stack
from secret_key_ring import code_digest, key_id, open_box, ring_keys
from test_recovery import verified_account


def rows(stack, statement):
    return [json.loads(row[0]) for row in stack.sql(statement)]


def wait_until(condition, timeout=30):
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)
    return found


def test_a_queued_recovery_code_is_neither_readable_nor_reversible_from_the_database(stack, mailbox):
    client = Client(stack)
    address, token = verified_account(stack, mailbox, client)
    account_id = client.call("GET", "/v1/session", token=token).json()["accountID"]
    # The relay is down: the message waits in the outbox with its code, as through an outage.
    mailbox.stop()
    try:
        assert client.call("POST", "/v1/recovery", {"email": address}).status == 202
        outbox = wait_until(lambda: rows(
            stack, f"SELECT row_to_json(o) FROM email_outbox o WHERE recipient = '{address}' AND sent_at IS NULL"))
        codes = rows(stack, f"SELECT row_to_json(c) FROM email_codes c "
                            f"WHERE account_id = '{account_id}' AND purpose = 'recovery' AND consumed_at IS NULL")
    finally:
        mailbox.start()
    code = mailbox.latest_code(address, count=2)
    assert code

    # Everything a reader of the two tables gets, as text, and what it could try on it.
    [message] = outbox
    [stored] = codes
    seen = json.dumps(outbox) + json.dumps(codes)
    assert code not in seen, "the code is nowhere in clear"
    assert message["code"] is None
    sealed = bytes.fromhex(message["sealed_code"].removeprefix("\\x"))
    assert code.encode() not in sealed
    salt = bytes.fromhex(stored["salt"].removeprefix("\\x"))
    digest = bytes.fromhex(stored["code_digest"].removeprefix("\\x"))
    # The unkeyed digest a reader could reverse by trying the 10^8 codes is not what is stored, in any arrangement.
    for guess in (salt + code.encode(), code.encode() + salt, code.encode()):
        assert hashlib.sha256(guess).digest() != digest
    # Nor does any key the database holds open the box: it opens only under the ring's key, outside the database.
    [ring_key] = ring_keys(stack.key_encryption_key)
    assert message["code_key_id"] == stored["digest_key_id"] == key_id(ring_key)
    for wrong in (salt.ljust(32, b"\0"), digest, bytes(32)):
        with pytest.raises(InvalidTag):
            open_box(wrong, "email-outbox-code", sealed, message["id"].encode())
    assert open_box(ring_key, "email-outbox-code", sealed, message["id"].encode()) == code.encode()
    assert code_digest(ring_key, salt, code) == digest

    # The mail arrived with the right code, and it recovers the account.
    finished = client.call("POST", "/v1/recovery/finish", {"email": address, "code": code})
    assert finished.status == 200, finished.body
    # Once sent, the message keeps no code in any form.
    assert stack.sql(f"SELECT count(*) FROM email_outbox WHERE recipient = '{address}' "
                     f"AND (code IS NOT NULL OR sealed_code IS NOT NULL)") == [["0"]]


def test_a_code_and_message_stored_before_sealing_are_still_sent_and_accepted_until_they_expire(stack, mailbox):
    client = Client(stack)
    address, token = verified_account(stack, mailbox, client)
    account_id = client.call("GET", "/v1/session", token=token).json()["accountID"]
    email_id = stack.sql(f"SELECT id FROM account_emails WHERE account_id = '{account_id}'")[0][0]

    def legacy(code, expires):
        """A recovery code and its message as a release before migration 0018 stored them."""
        salt = os.urandom(16)
        stack.sql(f"""INSERT INTO email_codes (id, account_id, email_id, purpose, salt, code_digest, created_at,
                                               expires_at)
                      VALUES (gen_random_uuid(), '{account_id}', '{email_id}', 'recovery', '\\x{salt.hex()}',
                              '\\x{hashlib.sha256(salt + code.encode()).hexdigest()}', now() - interval '1 minute',
                              now() + interval '{expires}')""")
        stack.sql(f"""INSERT INTO email_outbox (id, recipient, template, code, expires_at)
                      VALUES (gen_random_uuid(), '{address}', 'recovery_code', '{code}', now() + interval '{expires}')""")

    legacy("13572468", "9 minutes")
    [message] = mailbox.wait_for(address, count=2)[1:]
    assert message["code"] == "13572468", "sent by the worker as it was queued"
    assert stack.sql(f"SELECT count(*) FROM email_outbox WHERE recipient = '{address}' AND code IS NOT NULL") == [["0"]]
    assert client.call("POST", "/v1/recovery/finish", {"email": address, "code": "13572468"}).status == 200

    # One whose code has expired is refused like any other.
    legacy("24681357", "9 minutes")
    mailbox.wait_for(address, count=3)
    stack.sql(f"UPDATE email_codes SET expires_at = now() - interval '1 second', created_at = now() - interval '11 minutes' "
              f"WHERE account_id = '{account_id}' AND consumed_at IS NULL")
    expired = client.call("POST", "/v1/recovery/finish", {"email": address, "code": "24681357"})
    assert (expired.status, expired.json()["code"]) == (400, "invalid_code")


def test_the_key_ring_rotates_without_a_code_or_a_signing_key_that_stops_opening(mailbox):
    """The rotation of docs/operations.md on a stack of its own: a code queued and digested under the first key is
    still mailed and accepted once the new key is current, new codes are made under the new key, and the signing keys
    sealed under the first key still sign."""
    stack = Stack({"SMTP_URL": f"smtp://127.0.0.1:{mailbox.port}", "SMTP_STARTTLS": "off"}).start()
    try:
        client = Client(stack)
        address, token = verified_account(stack, mailbox, client)
        [first] = ring_keys(stack.key_encryption_key)
        mailbox.stop()
        try:
            assert client.call("POST", "/v1/recovery", {"email": address}).status == 202
            wait_until(lambda: stack.sql(f"SELECT code_key_id FROM email_outbox WHERE recipient = '{address}' "
                                         f"AND sent_at IS NULL") == [[key_id(first)]])
            # Steps 1 and 2 at once for a single replica: the new key first, the old one kept.
            second = os.urandom(32)
            stack.key_encryption_key.write_text(f"# rotated\n{second.hex()}\n{first.hex()}\n")
            for name in ("session-service", "verification-service"):
                stack.kill(name)
                stack.restart(name)
        finally:
            mailbox.start()
        code = mailbox.latest_code(address, count=2)
        assert stack.sql(f"SELECT digest_key_id FROM email_codes WHERE account_id = "
                         f"(SELECT account_id FROM account_emails WHERE email = '{address}') AND consumed_at IS NULL"
                         ) == [[key_id(first)]]
        finished = client.call("POST", "/v1/recovery/finish", {"email": address, "code": code})
        assert finished.status == 200, finished.body
        # New codes under the new key; the signing key sealed under the old one still signs.
        assert client.call("POST", "/v1/recovery", {"email": address}).status == 202
        newer = mailbox.latest_code(address, count=3)
        assert stack.sql(f"SELECT digest_key_id FROM email_codes WHERE account_id = "
                         f"(SELECT account_id FROM account_emails WHERE email = '{address}') AND consumed_at IS NULL"
                         ) == [[key_id(second)]]
        assert client.call("POST", "/v1/recovery/finish", {"email": address, "code": newer}).status == 200
        signed_in = client.call("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD})
        assert signed_in.status == 200, signed_in.body
        assert client.call("GET", "/v1/session", token=signed_in.json()["accessToken"]).status == 200
    finally:
        stack.stop()
