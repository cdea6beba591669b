"""Compatibility: with PASSKEY_SESSION_TOKENS=opaque a deployment keeps the earlier sessions (one opaque bearer
token that lives as long as the session, no refresh token, no key needed), and a deployment that moves from opaque
to signed tokens keeps accepting the opaque tokens it already issued until they expire."""

import re

import pytest

from sessions_support import (
    Authenticator, create_password_account, current_session, passkey_sign_in, passkey_sign_up, password_sign_in,
    problem, refresh, running_stack)

OPAQUE = re.compile(r"^[A-Za-z0-9_-]{64}$")


@pytest.fixture(scope="module")
def opaque_stack():
    # No key-encryption key: an opaque deployment needs none.
    environment = {"PASSKEY_SESSION_TOKENS": "opaque", "PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE": ""}
    with running_stack("opaque", environment) as stack:
        yield stack


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
