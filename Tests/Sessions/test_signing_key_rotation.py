"""Signing keys rotated through the admin API while clients sign in and refresh, and a retired key's life after
retirement, with 30 s access tokens (the shortest allowed)."""

import os
import threading
import time

import jwt
import pytest

from sessions_support import (
    PASSWORD, Authenticator, RelyingBackend, create_password_account, current_session, passkey_sign_up,
    password_sign_in, problem, published_key_ids, running_stack, wait_for)

# Services reload their keys every 5 s and the gateway refreshes its JWKS copy every 2 s: a rotated-in key must
# wait out both (and some margin) before it signs, or tokens reach clients before the key that signed them is
# published. With a 3 s delay about 120 of the load's tokens failed that way (SESSIONS_PUBLISH_DELAY=3 shows it).
RELOAD_INTERVAL = 5
PUBLISH_DELAY = int(os.environ.get("SESSIONS_PUBLISH_DELAY", "10"))


def signing_key(stack):
    keys = stack.admin.json("GET", "/admin/v1/signing-keys")["keys"]
    [signing] = [key for key in keys if key["state"] == "signing"]
    return signing["keyID"]


def key_states(stack):
    return {key["keyID"]: key["state"] for key in stack.admin.json("GET", "/admin/v1/signing-keys")["keys"]}


class Load:
    """Threads that each sign in with a password, with a passkey, and refresh, in turn, as fast as they can; every
    session document is checked at once: its access token must verify against the JWKS fetched right after it was
    issued (PyJWT and joserfc) and be accepted by GET /v1/session."""

    def __init__(self, stack, directory, threads=4):
        self.stack = stack
        self.failures = []
        self.issued = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.clients = []
        for _ in range(threads):
            address, _ = create_password_account(stack)
            authenticator = Authenticator(directory)
            passkey_sign_up(stack, authenticator)
            self.clients.append((address, authenticator))
        self.threads = [threading.Thread(target=self.run, args=client, daemon=True) for client in self.clients]

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=30)

    def fail(self, *what):
        with self.lock:
            self.failures.append(what)

    def check(self, kind, answer):
        if answer.status != 200:
            return self.fail(kind, answer.status, answer.body[:300])
        document = answer.json()
        jwks = self.stack.backend.jwks()
        try:
            header, _ = self.stack.backend.verify(document["accessToken"], jwks)
        except Exception as error:  # noqa: BLE001  (any refusal is the failure being counted)
            kid = jwt.get_unverified_header(document["accessToken"]).get("kid")
            return self.fail(kind, repr(error), kid, [key["kid"] for key in jwks["keys"]])
        accepted = current_session(self.stack, document["accessToken"])
        if accepted.status != 200:
            return self.fail(kind, "GET /v1/session", accepted.status, accepted.body[:300], header["kid"])
        with self.lock:
            self.issued.append((time.monotonic(), kind, header["kid"]))
        return document

    def run(self, address, authenticator):
        stack = self.stack
        refresh_token = None
        turn = 0
        while not self.stopping.is_set():
            kind = ("password", "passkey", "refresh")[turn % 3]
            turn += 1
            try:
                if kind == "password":
                    answer = stack.request("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD})
                elif kind == "passkey":
                    start = stack.request("POST", "/v1/passkeys/authentications", {})
                    answer = start if start.status != 200 else stack.request(
                        "POST", "/v1/passkeys/authentications/finish", authenticator.assertion(start.json(),
                                                                                               stack.origin))
                elif refresh_token:
                    answer = stack.request("POST", "/v1/session/refresh", {"refreshToken": refresh_token})
                else:
                    continue
                document = self.check(kind, answer)
                if document:
                    refresh_token = document["refreshToken"]
            except Exception as error:  # noqa: BLE001
                self.fail(kind, repr(error))

    def kinds_signed_by(self, kid, since=0.0):
        with self.lock:
            return {kind for at, kind, signed_by in self.issued if signed_by == kid and at >= since}

    def kids_since(self, since):
        with self.lock:
            return {signed_by for at, _, signed_by in self.issued if at >= since}


def test_rotation_then_retirement_under_load(tmp_path):
    environment = {"PASSKEY_ACCESS_TOKEN_LIFETIME": "30s",
                   "PASSKEY_SIGNING_KEY_PUBLISH_DELAY": f"{PUBLISH_DELAY}s"}
    with running_stack("rotation", environment, admin=True) as stack:
        stack.backend = RelyingBackend(stack)
        old = signing_key(stack)
        with Load(stack, tmp_path) as load:
            wait_for(lambda: load.kinds_signed_by(old) == {"password", "passkey", "refresh"}, 10,
                     lambda: (load.issued[-5:], load.failures))
            rotated = stack.admin.json("POST", "/admin/v1/signing-keys", expect=201)
            rotated_at = time.monotonic()
            new = rotated["keyID"]
            assert rotated["state"] == "pending" and new != old
            # Nothing else signs yet: the old key may not be retired.
            status, refused = stack.admin.call("POST", f"/admin/v1/signing-keys/{old}/retire")
            assert (status, refused["code"]) == (409, "conflict"), refused
            # Published first, and signing only after the publish delay, from both processes that issue sessions.
            wait_for(lambda: new in published_key_ids(stack), RELOAD_INTERVAL + 3, lambda: "never published")
            wait_for(lambda: load.kinds_signed_by(new) == {"password", "passkey", "refresh"},
                     PUBLISH_DELAY + RELOAD_INTERVAL + 5, lambda: (load.issued[-5:], load.failures))
            first_signed = min(at for at, _, kid in load.issued if kid == new)
            assert first_signed - rotated_at >= PUBLISH_DELAY - 1

            retired = stack.admin.json("POST", f"/admin/v1/signing-keys/{old}/retire")
            assert retired["state"] == "retired" and retired["keyID"] == old
            # Once every process has reloaded, only the new key signs.
            settled = time.monotonic() + RELOAD_INTERVAL + 1
            time.sleep(RELOAD_INTERVAL + 3)
        assert load.failures == [], load.failures[:10]
        assert load.kids_since(settled) == {new}
        assert len(load.issued) > 60, len(load.issued)
        # The retired key stays published while tokens it signed may still be live.
        assert old in published_key_ids(stack)
        assert key_states(stack) == {old: "retired", new: "signing"}


def test_a_retired_key_leaves_the_jwks_and_its_tokens_are_refused(tmp_path):
    """A retired key is published for the access-token lifetime plus the 60 s leeway after its retirement, then
    withdrawn. Waiting for that (60 s + 60 s + a reload) would take most of the suite's time budget, so after
    checking that the key is still published right after retirement, the test moves the retirement 121 s back in the
    database, which is what the services would read once that time had passed."""
    environment = {"PASSKEY_ACCESS_TOKEN_LIFETIME": "60s", "PASSKEY_SIGNING_KEY_PUBLISH_DELAY": "10s"}
    with running_stack("retired", environment, admin=True) as stack:
        backend = RelyingBackend(stack)
        address, _ = create_password_account(stack)
        old = signing_key(stack)
        document = password_sign_in(stack, address)
        header, claims = backend.verify(document["accessToken"])
        assert header["kid"] == old

        new = stack.admin.json("POST", "/admin/v1/signing-keys", expect=201)["keyID"]
        # The only signing key cannot be retired while its successor waits out its publish delay.
        status, body = stack.admin.call("POST", f"/admin/v1/signing-keys/{old}/retire")
        assert status == 409 and body["code"] == "conflict", body
        wait_for(lambda: new in published_key_ids(stack), RELOAD_INTERVAL + 3, lambda: "the new key never published")
        wait_for(lambda: jwt.get_unverified_header(password_sign_in(stack, address)["accessToken"])["kid"] == new,
                 10 + RELOAD_INTERVAL + 3, lambda: "the new key never signed")
        assert stack.admin.json("POST", f"/admin/v1/signing-keys/{old}/retire")["state"] == "retired"
        # Right after retirement: still published, and its token still good everywhere.
        for _ in range(3):
            assert old in published_key_ids(stack)
            backend.verify(document["accessToken"])
            assert current_session(stack, document["accessToken"]).status == 200
            time.sleep(1)

        stack.sql(f"UPDATE session_signing_keys SET retired_at = now() - interval '121 seconds' WHERE key_id = '{old}'")
        wait_for(lambda: old not in published_key_ids(stack), RELOAD_INTERVAL + 5,
                 lambda: "the retired key was never withdrawn")
        # The token has not expired: it is refused because its key is no longer published.
        assert claims["exp"] > time.time() + 5
        with pytest.raises(jwt.PyJWKClientError):
            backend.verify_with_pyjwt(document["accessToken"])
        refused = current_session(stack, document["accessToken"])
        assert problem(refused) == (401, "unauthenticated", "unknown_key"), refused.body
        assert old not in key_states(stack)
        # The session itself lives on: a refresh gets a token from the new key.
        refreshed = stack.request("POST", "/v1/session/refresh", {"refreshToken": document["refreshToken"]})
        assert refreshed.status == 200, refreshed.body
        assert backend.verify(refreshed.json()["accessToken"])[0]["kid"] == new
