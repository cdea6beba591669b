"""The services on the HA cluster under load, for the failover tests and the restore drill: the stack on the
cluster's multi-host URL, passkey-signin-load recording every ceremony, a mixed load of sign-ups and password
sign-ins recording every outcome, and the checks that nothing acknowledged is lost."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import urllib.error
import uuid
from pathlib import Path

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "Tests" / "Support" / "python"))
from openssl_authenticator import Authenticator  # noqa: E402
from passkey_stack import BIN, Response, Stack  # noqa: E402

PASSWORD = "correct horse battery staple"


class ClusterStack(Stack):
    """The stack on the cluster's own database and user, through the multi-host URL `up` printed."""

    def __init__(self, url: str):
        super().__init__(prefix="failover", environment={
            # The load comes from one address.
            "PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL": "0", "PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS": "0",
            "PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_START_PER_ADDRESS": "0",
            "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "0", "EVENT_LOOP_THREADS": "1",
        })
        self.url = url

    def start(self):
        # The cluster's database exists already: only the processes.
        return self.launch()

    def stop(self):
        self.stop_processes()

    def request(self, method, path, body=None, token=None, client_address=None, raw=None, headers=None):
        try:
            return super().request(method, path, body, token, client_address, raw, headers)
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            return Response(0, {}, str(error).encode())


class MixedLoad(threading.Thread):
    """Passkey sign-ups, password sign-ups and password sign-ins in turn, about six a second, each outcome
    recorded with the wall-clock time it started."""

    def __init__(self, stack: ClusterStack, directory: Path, password_accounts: list[str], seconds: int):
        super().__init__(daemon=True)
        self.stack = stack
        self.directory = directory
        self.password_accounts = password_accounts
        self.stopping = threading.Event()
        # (started, kind, status, detail, ended): detail is the authenticator, the email or the session token.
        self.records: list[tuple[float, str, int, object]] = []
        # Keys made before the clock starts: openssl's key generation is not what is measured.
        self.authenticators = [Authenticator(directory) for _ in range(seconds * 2 + 10)]

    def passkey_signup(self):
        authenticator = self.authenticators.pop() if self.authenticators else Authenticator(self.directory)
        email = f"pk-{uuid.uuid4().hex[:12]}@example.com"
        start = self.stack.request("POST", "/v1/passkeys/account-registrations",
                                   {"email": email, "displayName": "Failover"})
        if start.status != 200:
            return start.status, None
        body = {"registrationID": start.json()["registrationID"],
                **authenticator.registration(start.json(), self.stack.origin)}
        finish = self.stack.request("POST", "/v1/passkeys/account-registrations/finish", body)
        return finish.status, authenticator

    def password_signup(self):
        email = f"pw-{uuid.uuid4().hex[:12]}@example.com"
        answer = self.stack.request("POST", "/v1/accounts/password",
                                    {"email": email, "password": PASSWORD, "displayName": "Failover"})
        return answer.status, email

    def password_signin(self):
        email = self.password_accounts[len(self.records) % len(self.password_accounts)]
        answer = self.stack.request("POST", "/v1/sessions/password", {"email": email, "password": PASSWORD})
        return answer.status, answer.json()["accessToken"] if answer.status == 200 else None

    def run(self):
        kinds = [("passkey_signup", self.passkey_signup), ("password_signup", self.password_signup),
                 ("password_signin", self.password_signin)]
        turn = 0
        while not self.stopping.is_set():
            kind, action = kinds[turn % len(kinds)]
            turn += 1
            started = time.time()
            status, detail = action()
            self.records.append((started, kind, status, detail, time.time()))
            time.sleep(max(0.0, 1 / 6 - (time.time() - started)))


def make_password_accounts(stack: ClusterStack, count: int) -> list[str]:
    emails = []
    for _ in range(count):
        email = f"pw-{uuid.uuid4().hex[:12]}@example.com"
        answer = stack.request("POST", "/v1/accounts/password",
                               {"email": email, "password": PASSWORD, "displayName": "Failover"})
        assert answer.status == 201, answer.body
        emails.append(email)
    return emails


def passkey_signs_in(stack: ClusterStack, authenticator: Authenticator) -> int:
    start = stack.request("POST", "/v1/passkeys/authentications", {})
    if start.status != 200:
        return start.status
    return stack.request("POST", "/v1/passkeys/authentications/finish",
                         authenticator.assertion(start.json(), stack.origin)).status



class SignInLoad:
    """passkey-signin-load at a fixed rate, recording every ceremony (Tests/Benchmarks/SignInLoad's --record)."""

    def __init__(self, stack: ClusterStack, directory: Path, rate: int, seconds: int):
        self.record = directory / "signins.txt"
        self.process = subprocess.Popen(
            [str(BIN / "passkey-signin-load"), "--url", stack.base_url, "--origin", stack.origin, "--rp-id",
             "localhost", "--synced", "--connections", "16", "--duration", str(seconds), "--rate", str(rate),
             "--record", str(self.record), "--report-failures"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def stop(self):
        """Ends the run early: no new ceremony starts, those begun finish and are recorded."""
        self.process.send_signal(signal.SIGTERM)

    def outcomes(self, timeout: float) -> list[tuple]:
        """Waits for the end; (started, "passkey_signin", status, token or failure, ended) per ceremony."""
        output, errors = self.process.communicate(timeout=timeout)
        assert self.process.returncode == 0, output + errors
        outcomes = []
        for line in self.record.read_text().splitlines():
            # "START END ok 200 TOKEN", or "START END STEP STATUS CODE" with STATUS "transport" when no answer came.
            started, ended, outcome, status, detail = line.split()
            outcomes.append((float(started), "passkey_signin", int(status) if status.isdigit() else 0,
                             detail if outcome == "ok" else f"{outcome} {status} {detail}", float(ended)))
        return outcomes


def lost_writes(stack: ClusterStack, outcomes: list[tuple]) -> dict[str, list]:
    """What was acknowledged among `outcomes` and is not there now, by kind: sessions that do not validate,
    passkey accounts that cannot sign in, password accounts whose password is refused. A 503 is asked again."""
    def ask(call):
        deadline = time.monotonic() + 20
        while True:
            status = call()
            if status != 503 or time.monotonic() > deadline:
                return status
            time.sleep(0.5)

    lost = {"sessions": [], "passkey accounts": [], "password accounts": []}
    for started, kind, status, detail, _ in outcomes:
        if kind in ("passkey_signin", "password_signin") and status == 200:
            answer = ask(lambda: stack.request("GET", "/v1/session", token=detail).status)
            if answer != 200:
                lost["sessions"].append((detail, answer))
        elif kind == "passkey_signup" and status == 201:
            answer = ask(lambda: passkey_signs_in(stack, detail))
            if answer != 200:
                lost["passkey accounts"].append(answer)
        elif kind == "password_signup" and status == 201:
            answer = ask(lambda: stack.request(
                "POST", "/v1/sessions/password", {"email": detail, "password": PASSWORD}).status)
            if answer != 200:
                lost["password accounts"].append((detail, answer))
    return lost


def acknowledged(outcomes: list[tuple]) -> dict[str, int]:
    counts = {"sessions": 0, "passkey accounts": 0, "password accounts": 0}
    for _, kind, status, _, _ in outcomes:
        if kind in ("passkey_signin", "password_signin") and status == 200:
            counts["sessions"] += 1
        elif kind == "passkey_signup" and status == 201:
            counts["passkey accounts"] += 1
        elif kind == "password_signup" and status == 201:
            counts["password accounts"] += 1
    return counts
