"""The contract suite: the real stack (services, gateway, Postgres) and an account with passkeys to test it with."""

import uuid

import pytest

from stack import Stack  # first: it puts Tests/Support/python on the path
from openssl_authenticator import registration_response  # noqa: E402

PASSWORD = "contract suite password"


@pytest.fixture(scope="session")
def stack():
    running = Stack().start()
    yield running
    running.stop()


@pytest.fixture(scope="session")
def account(stack):
    """A password account with three passkeys, so listing, renaming and removing them reach real rows. Its calls
    come from a client address of their own (the gateway trusts 127.0.0.1 as a proxy)."""
    email = f"contract-{uuid.uuid4().hex}@example.com"
    address = "2001:db8:18:1::1"
    created = stack.request(
        "POST", "/v1/accounts/password", {"email": email, "password": PASSWORD, "displayName": "Contract"},
        client_address=address)
    assert created.status == 201, created.body
    signed_in = stack.request(
        "POST", "/v1/sessions/password", {"email": email, "password": PASSWORD}, client_address=address)
    assert signed_in.status == 200, signed_in.body
    token = signed_in.json()["accessToken"]
    origin = f"http://localhost:{stack.gateway_port}"
    for _ in range(3):
        start = stack.request("POST", "/v1/passkeys/registrations", {}, token=token, client_address=address)
        assert start.status == 200, start.body
        body = dict(registration_response(start.json(), origin), challengeID=start.json()["challengeID"])
        finish = stack.request(
            "POST", "/v1/passkeys/registrations/finish", body, token=token, client_address=address)
        assert finish.status == 204, finish.body
    listed = stack.request("GET", "/v1/passkeys", token=token, client_address=address)
    assert len(listed.json()["passkeys"]) == 3
    return {"email": email, "password": PASSWORD, "token": token, "address": address}
