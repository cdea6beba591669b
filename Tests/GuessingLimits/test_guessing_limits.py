"""Guessing limits that hold across replicas, against the real processes: three gateways, each calling its own
session-service, all on one database. 200 wrong passwords for one account, each from its own client address and
spread over the gateways at once, reach a real password check at most 100 times (the budget is 100 failed guesses an
hour, counted in Postgres); after them the right password is refused with 429 and Retry-After, while the account's
passkey still signs in on every gateway and a recovery code still recovers it. Wrong recovery codes have a budget of
their own, which never says whether the address has an account and never locks the password or the passkey."""

import concurrent.futures
import json
import pathlib
import random
import subprocess
import sys
import uuid

import pytest

TESTS = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "Support" / "python"))

from passkey_stack import BIN, Stack, call, free_port, wait_for_port  # noqa: E402
from openssl_authenticator import Authenticator  # noqa: E402

PASSWORD = "guessing suite password"
REPLICAS = 3


class Replicas:
    """The stack's gateway and session-service, and two more of each: gateway i calls session-service i."""

    def __init__(self, stack):
        self.stack = stack
        self.gateway_ports = [stack.gateway_port]
        self.processes = []
        for index in range(1, REPLICAS):
            session_port = free_port()
            session_env = stack.environment("session-service")
            session_env["SESSION_SERVICE_LISTEN"] = f"127.0.0.1:{session_port}"
            self.start(f"session-service-{index}", "session-service", session_env)
            wait_for_port(session_port)
            gateway_port = free_port()
            gateway_env = stack.environment("gateway")
            gateway_env["GATEWAY_LISTEN"] = f"127.0.0.1:{gateway_port}"
            gateway_env["SESSION_SERVICE_ADDRESSES"] = f"127.0.0.1:{session_port}"
            self.start(f"gateway-{index}", "gateway", gateway_env)
            wait_for_port(gateway_port)
            self.gateway_ports.append(gateway_port)

    def start(self, log_name, binary, environment):
        log = open(self.stack.logs / f"{log_name}.log", "wb")
        self.processes.append(subprocess.Popen([str(BIN / binary)], env=environment, stdout=log, stderr=log))

    def request(self, replica, method, path, body=None, token=None, client_address=None):
        """`Stack.request` on gateway `replica` (of any number: they take turns)."""
        return call(f"http://127.0.0.1:{self.gateway_ports[replica % REPLICAS]}", method, path, body=body,
                    token=token, client_address=client_address, timeout=30)

    def stop(self):
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.wait(timeout=15)

    def exited(self):
        return [process.args for process in self.processes if process.poll() is not None]


@pytest.fixture(scope="module")
def stack():
    # The per-email limits of the gateways are off: what stops the guessing here is the account's budget alone,
    # which each replica's in-memory buckets could not give (each would allow its own).
    the_stack = Stack("guessing", environment={
        "PASSKEY_TRUSTED_PROXIES": "127.0.0.1", "PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL": "0",
        "PASSKEY_RATE_LIMIT_RECOVERY_PER_EMAIL": "0", "PASSKEY_RATE_LIMIT_RECOVERY_PER_ADDRESS": "0"}).start()
    the_stack.replicas = Replicas(the_stack)
    yield the_stack
    exited = the_stack.exited()
    dead = the_stack.replicas.exited()
    the_stack.replicas.stop()
    the_stack.stop()
    assert not exited and not dead, the_stack.log_text()


def client(index):
    """A client address of its own for each guess: half IPv4, half IPv6 in /64s of their own."""
    return f"198.51.{index // 250}.{index % 250 + 1}" if index % 2 else f"2001:db8:{index:x}::1"


def account_with_passkey_and_recovery_codes(stack, tmp_path):
    address = f"guess-{uuid.uuid4().hex[:12]}@example.com"
    created = stack.request("POST", "/v1/accounts/password",
                            {"email": address, "password": PASSWORD, "displayName": "Ada"})
    assert created.status == 201, created.body
    signed_in = stack.request("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD})
    assert signed_in.status == 200, signed_in.body
    token = signed_in.json()["accessToken"]
    authenticator = Authenticator(tmp_path)
    start = stack.request("POST", "/v1/passkeys/registrations", {}, token=token)
    assert start.status == 200, start.body
    body = dict(authenticator.registration(start.json(), stack.origin), challengeID=start.json()["challengeID"])
    assert stack.request("POST", "/v1/passkeys/registrations/finish", body, token=token).status == 204
    codes = stack.request("POST", "/v1/account/recovery-codes", {}, token=token)
    assert codes.status == 200, codes.body
    return address, created.json()["accountID"], authenticator, codes.json()["codes"]


def passkey_sign_in(stack, replica, authenticator):
    begun = stack.replicas.request(replica, "POST", "/v1/passkeys/authentications", {})
    assert begun.status == 200, begun.body
    return stack.replicas.request(replica, "POST", "/v1/passkeys/authentications/finish",
                                  authenticator.assertion(begun.json(), stack.origin))


def problem(response):
    return response.status, json.loads(response.body).get("code"), json.loads(response.body).get("reason")


def password_checks(stack, account_id):
    """The wrong passwords the session-services really checked for the account: their audit lines."""
    count = 0
    for log in stack.logs.glob("session-service*.log"):
        for line in log.read_text(errors="replace").splitlines():
            if "audit.sign_in.failed" in line and f"account.id={account_id}" in line \
                    and "reason=invalid_credentials" in line:
                count += 1
    return count


def level(stack, account_id, kind):
    rows = stack.sql(f"SELECT level FROM failed_guesses WHERE account_id = '{account_id}' AND kind = '{kind}'")
    return float(rows[0][0]) if rows else 0.0


def test_200_wrong_passwords_over_three_replicas_reach_at_most_100_checks(stack, tmp_path):
    address, account_id, authenticator, codes = account_with_passkey_and_recovery_codes(stack, tmp_path)

    def guess(index):
        return stack.replicas.request(index, "POST", "/v1/sessions/password",
                                      {"email": address, "password": f"wrong password {index}"},
                                      client_address=client(index))

    with concurrent.futures.ThreadPoolExecutor(max_workers=12) as pool:
        answers = list(pool.map(guess, range(200)))
    statuses = [answer.status for answer in answers]
    checked = statuses.count(401)
    refused = [answer for answer in answers if answer.status == 429]
    assert checked + len(refused) == 200, statuses
    assert checked <= 100, f"{checked} wrong passwords were checked"
    assert checked >= 50, "the burst of 50 is checked"
    assert {problem(answer) for answer in refused} == {(429, "rate_limited", "too_many_failed_guesses")}
    # What the services logged agrees with what the clients saw: no check the client did not hear of.
    assert password_checks(stack, account_id) == checked
    assert level(stack, account_id, "password") <= 101

    # The right password is refused too, on every replica, with the time until one guess has drained.
    for replica in range(REPLICAS):
        right = stack.replicas.request(replica, "POST", "/v1/sessions/password",
                                       {"email": address, "password": PASSWORD}, client_address=client(1000 + replica))
        assert problem(right) == (429, "rate_limited", "too_many_failed_guesses"), right.body
        assert 1 <= int(right.headers["Retry-After"]) <= 3600, right.headers["Retry-After"]
        assert "accessToken" not in right.json()
    assert password_checks(stack, account_id) == checked, "the right password was not checked either"

    # The lock is the password's alone: the passkey signs in on every replica, and recovery works.
    for replica in range(REPLICAS):
        signed_in = passkey_sign_in(stack, replica, authenticator)
        assert signed_in.status == 200, signed_in.body
        assert signed_in.json()["accountID"] == account_id
    recovered = stack.replicas.request(2, "POST", "/v1/recovery/finish",
                                       {"email": address, "recoveryCode": codes[0]}, client_address=client(2000))
    assert recovered.status == 200, recovered.body

    # An hour later (the stored time moved back) the budget has drained and the right password signs in.
    stack.sql(f"UPDATE failed_guesses SET updated_at = updated_at - interval '1 hour' "
              f"WHERE account_id = '{account_id}'")
    again = stack.replicas.request(1, "POST", "/v1/sessions/password", {"email": address, "password": PASSWORD},
                                   client_address=client(3000))
    assert again.status == 200, again.body


def wrong_recovery_code():
    letters = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford base32, as the codes are made
    return "-".join("".join(random.choice(letters) for _ in range(4)) for _ in range(4))


def test_wrong_recovery_codes_spend_a_budget_of_their_own(stack, tmp_path):
    address, account_id, authenticator, codes = account_with_passkey_and_recovery_codes(stack, tmp_path)
    unknown = f"nobody-{uuid.uuid4().hex[:12]}@example.com"

    def guess(index, email=address):
        return stack.replicas.request(index, "POST", "/v1/recovery/finish",
                                      {"email": email, "recoveryCode": wrong_recovery_code()},
                                      client_address=client(index))

    with concurrent.futures.ThreadPoolExecutor(max_workers=12) as pool:
        answers = list(pool.map(guess, range(120)))
        strangers = list(pool.map(lambda index: guess(index, unknown), range(120)))
    # Every failure reads the same, for the account and for an address no account has, locked or not.
    assert {problem(answer) for answer in answers + strangers} == {(400, "invalid_code", None)}
    assert 49 <= level(stack, account_id, "code") <= 101, "the burst of 50, less what drained meanwhile"
    # Now even a right recovery code is refused, as a wrong one would be ...
    right = stack.replicas.request(0, "POST", "/v1/recovery/finish", {"email": address, "recoveryCode": codes[0]},
                                   client_address=client(5000))
    assert problem(right) == (400, "invalid_code", None)
    # ... while the password and the passkey, which have budgets of their own, sign in.
    signed_in = stack.replicas.request(1, "POST", "/v1/sessions/password", {"email": address, "password": PASSWORD},
                                       client_address=client(5001))
    assert signed_in.status == 200, signed_in.body
    assert passkey_sign_in(stack, 2, authenticator).status == 200
    assert level(stack, account_id, "password") == 0
    # Once the budget has drained, the code that was refused recovers the account: it was never used.
    stack.sql(f"UPDATE failed_guesses SET updated_at = updated_at - interval '1 hour' "
              f"WHERE account_id = '{account_id}'")
    recovered = stack.replicas.request(2, "POST", "/v1/recovery/finish",
                                       {"email": address, "recoveryCode": codes[0]}, client_address=client(5002))
    assert recovered.status == 200, recovered.body
