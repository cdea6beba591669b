"""An operator's disable racing a recovery leaves no live session on the disabled account (M6 of the 2026-12-07
review): every path that issues a session locks the account row and refuses a disabled account, the disable revokes
what committed before it, and a session is validated against the account's state. Each race runs ROUNDS times
against the real stack, the two requests released together with a small random head start for either side, so
that the rounds sweep the window in which one commits while the other runs."""

import os
import random
import subprocess
import threading
import uuid

import pytest

from conftest import Client, Stack
from openssl_authenticator import registration_response
from passkey_stack import BIN, free_port
from test_admin_mail import admin

ROUNDS = 200


@pytest.fixture(scope="module")
def race_stack():
    port = free_port()
    running = Stack({
        "ADMIN_LISTEN": f"127.0.0.1:{port}", "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "0",
        "PASSKEY_RATE_LIMIT_START_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_START_GLOBAL": "0",
        "PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_RECOVERY_PER_ADDRESS": "0",
        "PASSKEY_RATE_LIMIT_ADMIN_PER_ADDRESS": "0",
    }).start()
    running.admin_url = f"http://127.0.0.1:{port}"
    running.admin_token = subprocess.run(
        [BIN / "passkey-admin", "token", "create", "--name", "race", "--scopes", "read,write"],
        env={**os.environ, "DATABASE_URL": running.url}, capture_output=True, text=True, check=True,
    ).stdout.strip().splitlines()[-1]
    yield running
    running.stop()


def account_with_recovery_codes(stack):
    """A passkey account (sign-up signs in), its ID, email and ten recovery codes, from a client address of its own."""
    client = Client(stack)
    address = f"race-{uuid.uuid4().hex[:12]}@example.com"
    start = client.call("POST", "/v1/passkeys/account-registrations", {"email": address, "displayName": "Race"})
    assert start.status == 200, start.body
    body = dict(registration_response(start.json(), stack.origin), registrationID=start.json()["registrationID"])
    finish = client.call("POST", "/v1/passkeys/account-registrations/finish", body)
    assert finish.status == 201, finish.body
    token = finish.json()["accessToken"]
    account_id = client.call("GET", "/v1/session", token=token).json()["accountID"]
    codes = client.call("POST", "/v1/account/recovery-codes", token=token).json()["codes"]
    return client, account_id, address, codes


def race(first, second):
    """Runs both at once, each after its own random delay of up to 4 ms; returns their results."""
    results = [None, None]
    barrier = threading.Barrier(2)

    def run(index, call, delay):
        barrier.wait()
        threading.Event().wait(delay)
        results[index] = call()

    delays = [random.uniform(0, 0.004), random.uniform(0, 0.004)]
    threads = [threading.Thread(target=run, args=(i, call, delays[i])) for i, call in enumerate((first, second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def live_sessions(stack, account_id):
    return stack.sql(f"SELECT id, authentication_method FROM authentication_sessions "
                     f"WHERE account_id = '{account_id}' AND revoked_at IS NULL AND expires_at > now()")


def disable(stack, account_id):
    return lambda: admin(stack, "POST", f"/admin/v1/accounts/{account_id}/disable")


def test_a_recovery_finish_racing_a_disable_never_leaves_a_live_session(race_stack):
    outcomes = {}
    for round_ in range(ROUNDS):
        client, account_id, address, codes = account_with_recovery_codes(race_stack)
        disabled, finished = race(
            disable(race_stack, account_id),
            lambda: client.call("POST", "/v1/recovery/finish", {"email": address, "recoveryCode": codes[0]}))
        assert disabled[0] == 200, disabled
        outcomes[finished.status] = outcomes.get(finished.status, 0) + 1
        assert live_sessions(race_stack, account_id) == [], f"round {round_}: recovery answered {finished.status}"
        if finished.status == 200:
            # The recovery session it got is dead: it cannot even start its passkey registration.
            start = client.call("POST", "/v1/passkeys/registrations", {}, token=finished.json()["accessToken"])
            assert start.status in (401, 403), (round_, start.status, start.body)
    print("recovery finish outcomes", outcomes)


def test_a_recovery_passkey_finish_racing_a_disable_never_leaves_a_live_session(race_stack):
    outcomes = {}
    for round_ in range(ROUNDS):
        client, account_id, address, codes = account_with_recovery_codes(race_stack)
        recovered = client.call("POST", "/v1/recovery/finish", {"email": address, "recoveryCode": codes[0]})
        assert recovered.status == 200, recovered.body
        recovery_token = recovered.json()["accessToken"]
        start = client.call("POST", "/v1/passkeys/registrations", {}, token=recovery_token)
        assert start.status == 200, start.body
        body = dict(registration_response(start.json(), race_stack.origin), challengeID=start.json()["challengeID"])
        disabled, finished = race(
            disable(race_stack, account_id),
            lambda: client.call("POST", "/v1/recovery/passkeys/finish", body, token=recovery_token))
        assert disabled[0] == 200, disabled
        outcomes[finished.status] = outcomes.get(finished.status, 0) + 1
        assert live_sessions(race_stack, account_id) == [], f"round {round_}: the finish answered {finished.status}"
        if finished.status == 200:
            session = client.call("GET", "/v1/session", token=finished.json()["accessToken"])
            assert session.status == 401, (round_, session.status, session.body)
    print("recovery passkey finish outcomes", outcomes)
