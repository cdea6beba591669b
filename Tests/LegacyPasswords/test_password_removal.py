"""Stage ③: DELETE /v1/account/password against the real stack. Refused without a passkey, refused before a passkey
sign-in, allowed after; password sign-in then fails, the removal is audited, and the password can never be the
last way to sign in that goes."""

from conftest import PASSWORD


def problem(response):
    body = response.json()
    return response.status, body["code"], body.get("reason")


def test_the_password_goes_only_after_a_passkey_has_signed_in(client):
    address, account_id = client.create_password_account()
    token = client.sign_in(address, PASSWORD).json()["accessToken"]

    assert problem(client.call("DELETE", "/v1/account/password", token=token)) == (
        409, "last_sign_in_method", "no_passkey")
    authenticator = client.add_passkey(token)
    refused = client.call("DELETE", "/v1/account/password", token=token)
    assert problem(refused) == (409, "last_sign_in_method", "passkey_sign_in_required")
    assert refused.json()["detail"] == "sign in with a passkey once before removing the password"
    assert client.stored_hash(account_id) is not None
    # Another password sign-in proves nothing about the passkey.
    token = client.sign_in(address, PASSWORD).json()["accessToken"]
    assert problem(client.call("DELETE", "/v1/account/password", token=token))[2] == "passkey_sign_in_required"

    signed_in = client.passkey_sign_in(authenticator)
    assert signed_in.status == 200, signed_in.body
    # Any full session of the account may remove it now, the password session too.
    removed = client.call("DELETE", "/v1/account/password", token=token)
    assert removed.status == 204, removed.body
    assert client.stored_hash(account_id) is None
    account = client.call("GET", "/v1/account", token=token).json()
    assert account["hasPassword"] is False and account["passkeyCount"] == 1

    refused = client.sign_in(address, PASSWORD)
    assert problem(refused) == (401, "invalid_credentials", None)
    # An account without a password: 404, every time.
    for _ in range(2):
        assert problem(client.call("DELETE", "/v1/account/password", token=token)) == (404, "not_found", None)
    # The passkey is the last way in now.
    credential_id = client.call("GET", "/v1/passkeys", token=token).json()["passkeys"][0]["credentialID"]
    assert problem(client.call("DELETE", f"/v1/passkeys/{credential_id}", token=token))[:2] == (
        409, "last_sign_in_method")
    assert client.passkey_sign_in(authenticator).status == 200

    log = client.log("session-service").splitlines()
    removals = [line for line in log if "audit.password.removed" in line and f"account.id={account_id}" in line]
    assert len(removals) == 1, removals
    assert "request.id=" in removals[0] and "client.address=2001:db8:15:" in removals[0]
    refusals = [line for line in log if "audit.password.removal_refused" in line and f"account.id={account_id}" in line]
    assert [line.split("reason=")[1].split()[0] for line in refusals] == [
        "no_passkey", "passkey_sign_in_required", "passkey_sign_in_required", "not_found", "not_found"]


def test_a_passkey_only_account_has_no_password_to_remove(client):
    authenticator, account_id = client.create_passkey_account()
    token = client.passkey_sign_in(authenticator).json()["accessToken"]
    assert problem(client.call("DELETE", "/v1/account/password", token=token)) == (404, "not_found", None)
    assert client.sql(f"SELECT count(*) FROM passkey_credentials WHERE account_id = '{account_id}'") == [["1"]]


def test_removal_needs_a_full_session(client):
    assert problem(client.call("DELETE", "/v1/account/password")) == (401, "unauthenticated", None)
    assert problem(client.call("DELETE", "/v1/account/password", token="not-a-token"))[:2] == (401, "unauthenticated")
    assert problem(client.call("POST", "/v1/account/password", {"password": "a new passphrase"}))[:2] == (
        401, "unauthenticated")
    assert client.call("PUT", "/v1/account/password").status == 405
