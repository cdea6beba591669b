"""The services through a failover of their database, under load: passkey sign-ins from passkey-signin-load at a
fixed rate, with passkey sign-ups, password sign-ups and password sign-ins mixed in, while the primary is killed
(SIGKILL of its postmaster), switched over (patronictl switchover) or frozen past its leader key's TTL (SIGSTOP,
then SIGCONT).

After each fault, with the load ended:
- every sign-in answered 200 has a session that validates on the new primary;
- every account answered 201 exists, and every passkey answered 201 signs in: no acknowledged write is lost;
- every failure is a 503, and all of them fall inside the failover window;
- no service process restarted: they followed the primary on their own.
The figures (time from the fault to the first success and to the last failure, failures by kind) are printed at
the end of the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from conftest import FIGURES, REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "Tests" / "Support" / "python"))
from openssl_authenticator import Authenticator  # noqa: E402
from passkey_stack import BIN, SERVICES, Stack, wait_for_port  # noqa: E402

# passkey-signin-load's fixed rate (sign-ins per second) and how long each fault's load runs.
RATE = int(os.environ.get("FAILOVER_RATE", "60"))
LOAD_SECONDS = 24
FAULT_AFTER = 5
# How long after the fault failures may go on, and the first success must come. Patroni's ttl is 10 s
# (deploy/postgres-ha/lib.sh): a frozen primary is replaced only once its leader key expires.
WINDOW = {"sigkill": 10.0, "switchover": 10.0, "sigstop": 16.0}
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
        from passkey_stack import make_certificates
        make_certificates(self.certificates)
        subprocess.run([str(BIN / "passkey-migrate")], env=self.environment("passkey-migrate"), check=True,
                       capture_output=True)
        for name in SERVICES + ("gateway",):
            log = open(self.logs / f"{name}.log", "wb")
            self.processes[name] = subprocess.Popen([str(BIN / name)], env=self.environment(name), stdout=log,
                                                    stderr=log)
        for port in list(self.ports.values()) + [self.gateway_port]:
            wait_for_port(port)
        deadline = time.monotonic() + 30
        while self.request("GET", "/readyz").status != 200:
            assert time.monotonic() < deadline, "the stack never became ready:\n" + self.log_text()
            time.sleep(0.1)
        return self

    def stop(self):
        for process in self.processes.values():
            process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()

    def request(self, method, path, body=None, token=None, client_address=None, raw=None, headers=None):
        try:
            return super().request(method, path, body, token, client_address, raw, headers)
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            from passkey_stack import Response
            return Response(0, {}, str(error).encode())


@pytest.fixture(scope="module")
def stack(cluster):
    cluster.wait_healthy()
    the_stack = ClusterStack(cluster.url).start()
    pids = {name: process.pid for name, process in the_stack.processes.items()}
    yield the_stack
    exited = the_stack.exited()
    the_stack.stop()
    assert not exited, f"service processes exited: {exited}\n" + the_stack.log_text()
    assert {name: process.pid for name, process in the_stack.processes.items()} == pids


class MixedLoad(threading.Thread):
    """Passkey sign-ups, password sign-ups and password sign-ins in turn, about six a second, each outcome
    recorded with the wall-clock time it started."""

    def __init__(self, stack: ClusterStack, directory: Path, password_accounts: list[str]):
        super().__init__(daemon=True)
        self.stack = stack
        self.directory = directory
        self.password_accounts = password_accounts
        self.stopping = threading.Event()
        # (started, kind, status, detail): detail is the authenticator, the email or the session token.
        self.records: list[tuple[float, str, int, object]] = []
        # Keys made before the clock starts: openssl's key generation is not what is measured.
        self.authenticators = [Authenticator(directory) for _ in range(LOAD_SECONDS * 2 + 10)]

    def passkey_signup(self):
        authenticator = self.authenticators.pop()
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
            self.records.append((started, kind, status, detail))
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


def fault(cluster, kind: str, primary: int):
    """Injects the fault; returns a function to call once a new primary took over (the SIGCONT of a freeze)."""
    if kind == "sigkill":
        os.kill(cluster.postmaster_pid(primary), signal.SIGKILL)
        return lambda: None
    if kind == "switchover":
        result = subprocess.run(["patronictl", "-c", str(cluster.patroni_config()), "switchover", "--force"],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0 and "failed" not in result.stdout.lower(), result.stdout + result.stderr
        return lambda: None
    frozen = cluster.signal_node(primary, signal.SIGSTOP)
    return lambda: cluster.resume(frozen)


def wait_for_other_primary(cluster, old: int, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        others = [node for node in cluster.primaries() if node != old]
        if others:
            return others[0]
        time.sleep(0.2)
    raise AssertionError(f"no new primary within {timeout}s")


@pytest.mark.parametrize("kind", ["sigkill", "switchover", "sigstop"])
def test_no_acknowledged_write_is_lost_and_failures_are_503s_inside_the_failover_window(cluster, stack, kind):
    primary = cluster.wait_healthy()
    password_accounts = make_password_accounts(stack, 3)
    directory = Path(tempfile.mkdtemp(prefix="passkey-failover-"))
    record = directory / "signins.txt"
    mixed = MixedLoad(stack, directory, password_accounts)
    load = subprocess.Popen(
        [str(BIN / "passkey-signin-load"), "--url", stack.base_url, "--origin", stack.origin, "--rp-id", "localhost",
         "--synced", "--connections", "16", "--duration", str(LOAD_SECONDS), "--rate", str(RATE),
         "--record", str(record), "--report-failures"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The load generator makes its accounts before its clock starts; the fault comes FAULT_AFTER seconds in.
    time.sleep(3)
    mixed.start()
    time.sleep(FAULT_AFTER)
    fault_at = time.time()
    after_failover = fault(cluster, kind, primary)
    new_primary = wait_for_other_primary(cluster, primary) if kind != "sigkill" else None
    after_failover()
    output, errors = load.communicate(timeout=LOAD_SECONDS + 120)
    mixed.stopping.set()
    mixed.join(60)
    assert load.returncode == 0, output + errors

    # Every outcome, with the wall-clock time its request started.
    outcomes = []
    for line in record.read_text().splitlines():
        # "START ok 200 TOKEN", or "START STEP STATUS CODE" with STATUS "transport" when no answer came.
        started, outcome, status, detail = line.split()
        outcomes.append((float(started), "passkey_signin", int(status) if status.isdigit() else 0,
                         detail if outcome == "ok" else f"{outcome} {status} {detail}"))
    outcomes += mixed.records
    outcomes.sort(key=lambda outcome: outcome[0])
    successes = {201, 200}
    failures = [outcome for outcome in outcomes if outcome[2] not in successes]
    assert len(outcomes) > RATE * (LOAD_SECONDS - 4), f"the load did not run: {len(outcomes)} outcomes"

    # Every failure is a 503 (the problem document says unavailable), never a transport error or another status.
    assert all(outcome[2] == 503 for outcome in failures), \
        [outcome[:3] + (str(outcome[3])[:80],) for outcome in failures if outcome[2] != 503][:20]
    # ...and each falls inside the failover window: started after the fault, or in flight when it came.
    window = WINDOW[kind]
    outside = [outcome[:3] for outcome in failures
               if not (fault_at - 3.5 <= outcome[0] <= fault_at + window)]
    assert not outside, f"failures outside the window [{-3.5}, {window}] s around the fault: {outside[:10]}"
    first_success_after = next((outcome[0] - fault_at for outcome in outcomes
                                if outcome[0] >= fault_at and outcome[2] in successes), None)
    last_failure_after = max((outcome[0] - fault_at for outcome in failures), default=None)
    assert first_success_after is not None and first_success_after < window

    # Nothing acknowledged is lost: checked on the new primary, through the gateway.
    cluster.wait_healthy()
    sessions = [outcome[3] for outcome in outcomes if outcome[1] in ("passkey_signin", "password_signin")
                and outcome[2] == 200]
    lost_sessions = [(token, status) for token in sessions
                     if (status := stack.request("GET", "/v1/session", token=token).status) != 200]
    assert not lost_sessions, f"{len(lost_sessions)} of {len(sessions)} acknowledged sessions are gone: {lost_sessions}"
    passkeys = [outcome[3] for outcome in mixed.records if outcome[1] == "passkey_signup" and outcome[2] == 201]
    lost_passkeys = [authenticator for authenticator in passkeys if passkey_signs_in(stack, authenticator) != 200]
    assert not lost_passkeys, f"{len(lost_passkeys)} of {len(passkeys)} acknowledged passkey accounts cannot sign in"
    accounts = [outcome[3] for outcome in mixed.records if outcome[1] == "password_signup" and outcome[2] == 201]
    lost_accounts = [email for email in accounts if stack.request(
        "POST", "/v1/sessions/password", {"email": email, "password": PASSWORD}).status != 200]
    assert not lost_accounts, f"{len(lost_accounts)} of {len(accounts)} acknowledged password accounts are gone"
    assert passkeys and accounts, "the mixed load created nothing"
    assert not stack.exited(), stack.log_text()

    by_kind = {}
    for outcome in failures:
        by_kind[outcome[1]] = by_kind.get(outcome[1], 0) + 1
    FIGURES[f"services through {kind}"] = (
        f"{len(outcomes)} requests, {len(failures)} failed (all 503: {json.dumps(by_kind)}); first success "
        f"{first_success_after:.2f} s after the fault, last failure "
        + (f"{last_failure_after:.2f} s" if last_failure_after is not None else "none")
        + f"; {len(sessions)} sessions, {len(passkeys)} passkey accounts, {len(accounts)} password accounts "
        "acknowledged, none lost"
        + (f"; new primary node{new_primary}" if new_primary else ""))
