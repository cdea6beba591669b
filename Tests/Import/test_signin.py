"""Imported accounts sign in: passkey-import writes into the database of the real stack (services, gateway, mutual
TLS), and the gateway's password sign-in verifies the imported bcrypt and argon2id hashes (made by Python's bcrypt
and argon2-cffi) and replaces the bcrypt one with argon2id on the way."""

import json

import argon2
import pytest

from conftest import bcrypt_hash, run_import
from passkey_stack import Stack

BCRYPT_PASSWORD = "imported bcrypt password"
ARGON2_PASSWORD = "imported argon2id password"


@pytest.fixture(scope="module")
def stack():
    running = Stack("import", environment={
        "PASSKEY_TRUSTED_PROXIES": "127.0.0.1", "PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS": "0",
        "EVENT_LOOP_THREADS": "1"}).start()
    yield running
    running.stop()


def sign_in(stack, email, password):
    return stack.request("POST", "/v1/sessions/password", {"email": email, "password": password},
                         client_address="2001:db8:15::1")


def test_imported_accounts_sign_in_through_the_gateway(stack, tmp_path):
    argon2_hash = argon2.PasswordHasher().hash(ARGON2_PASSWORD)
    records = [
        {"email": "Legacy.Bcrypt@Example.com", "displayName": "Bcrypt User",
         "passwordHash": bcrypt_hash(BCRYPT_PASSWORD),
         "externalID": "legacy-1", "emailVerified": True},
        {"email": "legacy-argon2@example.com", "passwordHash": argon2_hash},
        {"email": "passkey-to-come@example.com", "displayName": "No Password", "emailVerified": True},
    ]
    path = tmp_path / "users.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    result = run_import([path], stack.url)
    assert result.returncode == 0, result.stdout + result.stderr

    signed_in = sign_in(stack, "legacy.bcrypt@example.com", BCRYPT_PASSWORD)
    assert signed_in.status == 200, signed_in.body
    token = signed_in.json()["accessToken"]
    account = stack.request("GET", "/v1/account", token=token).json()
    assert account["displayName"] == "Bcrypt User"
    assert account["emails"] == ["Legacy.Bcrypt@Example.com"]
    assert account["verifiedEmails"] == ["Legacy.Bcrypt@Example.com"]
    # The first sign-in replaced the bcrypt hash with the current argon2id one; the password still works.
    [[stored]] = stack.sql("SELECT p.password_hash FROM password_credentials p JOIN accounts a ON a.id = p.account_id "
                            "WHERE a.external_id = 'legacy-1'")
    assert stored.startswith("$argon2id$")
    assert sign_in(stack, "legacy.bcrypt@example.com", BCRYPT_PASSWORD).status == 200

    assert sign_in(stack, "legacy-argon2@example.com", ARGON2_PASSWORD).status == 200
    for email, password in [("legacy.bcrypt@example.com", ARGON2_PASSWORD),
                            ("legacy-argon2@example.com", BCRYPT_PASSWORD),
                            ("passkey-to-come@example.com", "anything at all")]:
        refused = sign_in(stack, email, password)
        assert refused.status == 401, (email, refused.body)
        assert refused.json()["code"] == "invalid_credentials"

    # The rerun finds the accounts as imported, although one hash was upgraded since.
    again = run_import([path], stack.url)
    assert again.returncode == 0, again.stdout
    assert again.stdout.decode().startswith("imported 0, skipped as unchanged 3, rejected 0")
