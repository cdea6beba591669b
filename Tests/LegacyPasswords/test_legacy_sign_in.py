"""A password sign-in with each legacy format, the hash made at test time by the real implementation (Python's
bcrypt, passlib, hashlib through Django and Werkzeug, argon2-cffi): the wrong password is refused and changes
nothing, the right one signs in and the row then holds the current argon2id (checked by argon2-cffi), the password
still works and the wrong one still fails."""

import re

import argon2
import bcrypt
import pytest
from django.conf import settings
from passlib import hash as passlib_hash
from werkzeug.security import generate_password_hash

from conftest import PASSWORD

settings.configure(PASSWORD_HASHERS=[
    "django.contrib.auth.hashers.PBKDF2PasswordHasher", "django.contrib.auth.hashers.ScryptPasswordHasher",
    "django.contrib.auth.hashers.Argon2PasswordHasher", "django.contrib.auth.hashers.BCryptPasswordHasher",
])
from django.contrib.auth.hashers import make_password  # noqa: E402

CURRENT = re.compile(r"^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$")


def django(hasher):
    def make(password):
        return make_password(password, hasher=hasher)
    return make


# name: (maker, the prefix the stored hash has, the scheme audit.password.rehashed names)
FORMATS = {
    "bcrypt-2b": (lambda p: bcrypt.hashpw(p.encode(), bcrypt.gensalt(5)).decode(), "$2b$05$", "bcrypt"),
    "bcrypt-2a": (lambda p: bcrypt.hashpw(p.encode(), bcrypt.gensalt(5, prefix=b"2a")).decode(), "$2a$05$", "bcrypt"),
    "bcrypt-2y": (lambda p: passlib_hash.bcrypt.using(ident="2y", rounds=5).hash(p), "$2y$05$", "bcrypt"),
    "sha512-crypt": (lambda p: passlib_hash.sha512_crypt.using(rounds=20000).hash(p), "$6$rounds=20000$",
                     "sha512-crypt"),
    "sha512-crypt-default-rounds": (lambda p: passlib_hash.sha512_crypt.using(rounds=5000).hash(p), "$6$",
                                    "sha512-crypt"),
    "sha256-crypt": (lambda p: passlib_hash.sha256_crypt.using(rounds=20000).hash(p), "$5$rounds=20000$",
                     "sha256-crypt"),
    "passlib-pbkdf2-sha256": (lambda p: passlib_hash.pbkdf2_sha256.hash(p), "$pbkdf2-sha256$29000$", "pbkdf2-sha256"),
    "passlib-pbkdf2-sha512": (lambda p: passlib_hash.pbkdf2_sha512.hash(p), "$pbkdf2-sha512$25000$", "pbkdf2-sha512"),
    "passlib-scrypt": (lambda p: passlib_hash.scrypt.using(rounds=14).hash(p), "$scrypt$ln=14,r=8,p=1$", "scrypt"),
    "django-pbkdf2-sha256": (django("pbkdf2_sha256"), "pbkdf2_sha256$", "pbkdf2-sha256"),
    "django-scrypt": (django("scrypt"), "scrypt$16384$", "scrypt"),
    "django-argon2": (django("argon2"), "argon2$argon2id$v=19$m=102400,t=2,p=8$", "argon2id"),
    "django-bcrypt": (django("bcrypt"), "bcrypt$$2b$12$", "bcrypt"),
    "werkzeug-pbkdf2-sha256": (lambda p: generate_password_hash(p, "pbkdf2:sha256:100000"), "pbkdf2:sha256:100000$",
                               "pbkdf2-sha256"),
    "werkzeug-pbkdf2-sha512": (lambda p: generate_password_hash(p, "pbkdf2:sha512:50000"), "pbkdf2:sha512:50000$",
                               "pbkdf2-sha512"),
    "werkzeug-scrypt": (lambda p: generate_password_hash(p, "scrypt"), "scrypt:32768:8:1$", "scrypt"),
    "argon2i": (lambda p: argon2.PasswordHasher(time_cost=2, memory_cost=8192, parallelism=1,
                                                type=argon2.Type.I).hash(p), "$argon2i$v=19$m=8192,t=2,p=1$", "argon2i"),
    "argon2id-weaker": (lambda p: argon2.PasswordHasher(time_cost=1, memory_cost=8192, parallelism=1).hash(p),
                        "$argon2id$v=19$m=8192,t=1,p=1$", "argon2id"),
    "argon2id-other-parameters": (lambda p: argon2.PasswordHasher().hash(p), "$argon2id$v=19$m=65536,t=3,p=4$",
                                  "argon2id"),
}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_each_legacy_format_signs_in_once_and_is_replaced_by_argon2id(client, name):
    make, prefix, scheme = FORMATS[name]
    address, account_id = client.create_password_account("a placeholder password")
    legacy = make(PASSWORD)
    assert legacy.startswith(prefix), legacy
    client.store_hash(account_id, legacy)

    for wrong in (PASSWORD + "!", PASSWORD.upper(), "", PASSWORD[:-1], "a placeholder password"):
        refused = client.sign_in(address, wrong)
        assert refused.status in (400, 401), (wrong, refused.body)
        if refused.status == 401:
            assert refused.json()["code"] == "invalid_credentials"
        assert client.stored_hash(account_id) == legacy, "a failed sign-in changed the hash"

    rehashes = f'passkey_password_rehashes_total{{from="{scheme}"}}'
    before = client.sample("session-service", rehashes)
    signed_in = client.sign_in(address, PASSWORD)
    assert signed_in.status == 200, signed_in.body
    assert client.sample("session-service", rehashes) == before + 1
    upgraded = client.stored_hash(account_id)
    assert CURRENT.match(upgraded), upgraded
    assert argon2.PasswordHasher().verify(upgraded, PASSWORD), "the new row does not hold this password"
    [[updated_later]] = client.sql(
        f"SELECT updated_at > created_at FROM password_credentials WHERE account_id = '{account_id}'")
    assert updated_later == "t"
    # The sign-in's session is in the same database.
    token = signed_in.json()["accessToken"]
    assert client.call("GET", "/v1/session", token=token).json()["authenticationMethod"] == "password"

    again = client.sign_in(address, PASSWORD)
    assert again.status == 200, again.body
    assert client.stored_hash(account_id) == upgraded, "a current hash was rewritten"
    assert client.sample("session-service", rehashes) == before + 1
    assert client.sign_in(address, PASSWORD + "!").status == 401
    assert client.sign_in(address, "a placeholder password").status == 401

    audit = [line for line in client.log("session-service").splitlines()
             if "audit.password.rehashed" in line and f"account.id={account_id}" in line]
    assert len(audit) == 1, audit
    assert f"from={scheme}" in audit[0] and "to=argon2id" in audit[0]


def test_a_current_argon2id_hash_is_left_alone(client):
    address, account_id = client.create_password_account("a placeholder password")
    current = argon2.PasswordHasher(time_cost=2, memory_cost=19456, parallelism=1).hash(PASSWORD)
    client.store_hash(account_id, current)
    assert client.sign_in(address, PASSWORD).status == 200
    assert client.stored_hash(account_id) == current


@pytest.mark.parametrize("stored", [
    "{SSHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=",
    "$1$saltsalt$qjXMvOEPYbFz3JYbOCrF4/",
    "$argon2d$v=19$m=8192,t=1,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaA",
    # Costs the parser refuses rather than ever computing: this bcrypt would take hours.
    "$2b$31$5uNMsxnFvuX4w0VUDBALxeNTxVjYRaRwHcmxu4BXakarvTzwkIi0C",
    "$scrypt$ln=30,r=8,p=1$UMo5pzRm7J0zZoxxDkEo5Q$46jioT+PwBah+NuExcBZLYrPW7Qy31AVmi1ALs6hDGs",
    "pbkdf2_sha256$999999999$salt$zZQxUZ/V/AxXKBWDw0gyOydBwzw3mm3qgdEuyruOEeY=",
])
def test_an_unreadable_or_too_costly_stored_hash_fails_closed(client, stored):
    """passkey-import refuses these; one that reaches the table anyway never signs in and is never rewritten."""
    address, account_id = client.create_password_account(PASSWORD)
    client.store_hash(account_id, stored)
    refused = client.sign_in(address, PASSWORD)
    assert refused.status == 401, refused.body
    assert refused.json()["code"] == "invalid_credentials"
    assert client.stored_hash(account_id) == stored
    assert any("password.hash_unreadable" in line and f"account.id={account_id}" in line
               for line in client.log("session-service").splitlines())


def test_an_unknown_email_and_a_wrong_password_answer_alike(client):
    address, _ = client.create_password_account(PASSWORD)
    unknown = client.sign_in("nobody-" + address, PASSWORD)
    wrong = client.sign_in(address, PASSWORD + "?")
    assert unknown.status == wrong.status == 401
    assert unknown.json() == wrong.json()
