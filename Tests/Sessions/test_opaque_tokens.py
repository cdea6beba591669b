"""Compatibility: with PASSKEY_SESSION_TOKENS=opaque a deployment keeps the earlier sessions (one opaque bearer
token that lives as long as the session, no refresh token, no signing key), and a deployment that moves from opaque
to signed tokens keeps accepting the opaque tokens it already issued until they expire. The key file is needed all the
same: it is the key ring that seals one-time codes and webhook secrets (docs/security.md)."""

import re
import subprocess

import pytest

from sessions_support import (
    BIN, Authenticator, create_password_account, current_session, passkey_sign_in, passkey_sign_up, password_sign_in,
    problem, refresh, running_stack)

OPAQUE = re.compile(r"^[A-Za-z0-9_-]{64}$")


@pytest.fixture(scope="module")
def opaque_stack():
    with running_stack("opaque", {"PASSKEY_SESSION_TOKENS": "opaque"}) as stack:
        yield stack


def test_an_opaque_deployment_still_needs_the_key_ring(opaque_stack):
    """session-service and verification-service refuse to start without it, naming the variable (status 2); the
    opaque stack above made no signing key with it."""
    for name in ("session-service", "verification-service"):
        environment = dict(opaque_stack.environment(name), PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE="")
        environment[f"{name.split('-')[0].upper()}_SERVICE_LISTEN"] = "127.0.0.1:0"
        result = subprocess.run([str(BIN / name)], env=environment, capture_output=True, text=True, timeout=60)
        assert result.returncode == 2, (name, result.returncode, result.stderr[-2000:])
        assert "PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE" in result.stderr + result.stdout, name
    assert opaque_stack.sql("SELECT count(*) FROM session_signing_keys") == [["0"]]


def test_opaque_sessions_have_one_bearer_token_and_no_refresh(opaque_stack, tmp_path):
    address, account_id = create_password_account(opaque_stack)
    session = password_sign_in(opaque_stack, address)
    assert OPAQUE.match(session["accessToken"]), session["accessToken"]
    assert "refreshToken" not in session and "refreshTokenExpiresAt" not in session
    assert session["expiresAt"] == session["sessionExpiresAt"], "the token lives as long as the session"
    assert session["expiresIn"] > 29 * 86_400
    assert current_session(opaque_stack, session["accessToken"]).json()["accountID"] == account_id

    authenticator = Authenticator(tmp_path)
    created = passkey_sign_up(opaque_stack, authenticator)
    assert OPAQUE.match(created["accessToken"]) and "refreshToken" not in created
    signed_in = passkey_sign_in(opaque_stack, authenticator)
    assert OPAQUE.match(signed_in["accessToken"]) and "refreshToken" not in signed_in
    assert current_session(opaque_stack, signed_in["accessToken"]).status == 200


def test_an_opaque_deployment_publishes_no_keys_and_refreshes_nothing(opaque_stack):
    assert opaque_stack.request("GET", "/.well-known/jwks.json").json() == {"keys": []}
    assert problem(refresh(opaque_stack, "prt_" + "A" * 70)) == (401, "unauthenticated", "refresh_token_invalid")


def test_opaque_tokens_issued_before_a_move_to_signed_tokens_keep_working():
    """One database, first served with opaque tokens, then with signed ones (the default): the opaque token issued
    before keeps working, and the next sign-in gets a signed access token and a refresh token."""
    with running_stack("moving", {"PASSKEY_SESSION_TOKENS": "opaque"}) as stack:
        address, account_id = create_password_account(stack)
        earlier = password_sign_in(stack, address)["accessToken"]
        assert OPAQUE.match(earlier)
        for name in list(stack.processes):
            stack.processes[name].terminate()
            stack.processes[name].wait(timeout=15)
        stack.extra["PASSKEY_SESSION_TOKENS"] = "jwt"
        stack.launch()
        assert current_session(stack, earlier).json()["accountID"] == account_id
        later = password_sign_in(stack, address)
        assert later["accessToken"].count(".") == 2 and later["refreshToken"].startswith("prt_")
        # Signing out with the old token ends that session only.
        assert stack.request("DELETE", "/v1/session", token=earlier).status == 204
        assert current_session(stack, earlier).status == 401
        assert current_session(stack, later["accessToken"]).status == 200
