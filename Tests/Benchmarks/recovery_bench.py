"""Account recovery on this machine, against the real stack (Tests/Support/python/passkey_stack.py) and a local aiosmtpd relay
(Tests/Recovery's mailbox): how fast the outbox drains into the relay, and how long POST /v1/recovery takes for a
verified address and for an address no account has (the answers are the same; the times show how close).

Run through Tests/Benchmarks/recovery-bench (it sets up DATABASE_URL and the venv). MESSAGES (default 300) outbox
rows are queued at once; STARTS (default 300) starts are timed per kind, alternating."""

import os
import pathlib
import statistics
import sys
import time
import uuid

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "Recovery"))

from conftest import Client, Mailbox, Stack  # noqa: E402

MESSAGES = int(os.environ.get("MESSAGES", "300"))
STARTS = int(os.environ.get("STARTS", "300"))


def report(what, times):
    for kind, values in times.items():
        values.sort()
        print(f"{what}, {kind} address: p50 {statistics.median(values):.2f} ms, "
              f"p90 {values[int(len(values) * 0.9)]:.2f} ms, p99 {values[int(len(values) * 0.99)]:.2f} ms "
              f"over {len(values)}")


def main():
    mailbox = Mailbox()
    mailbox.start()
    stack = Stack({
        "SMTP_URL": f"smtp://127.0.0.1:{mailbox.port}", "SMTP_STARTTLS": "off",
        "PASSKEY_RATE_LIMIT_RECOVERY_PER_EMAIL": "0", "PASSKEY_RATE_LIMIT_RECOVERY_PER_ADDRESS": "0",
        "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "0", "EVENT_LOOP_THREADS": "1",
    }).start()
    try:
        client = Client(stack)
        address, token = client.create_password_account()
        code = mailbox.latest_code(address)
        assert client.call("POST", "/v1/account/email/verify", {"code": code}, token=token).status == 204

        # The outbox: MESSAGES rows queued in one statement, then timed until the relay has them all.
        stack.kill("session-service")
        recipient = f"bench-{uuid.uuid4().hex[:8]}@example.com"
        stack.sql(f"INSERT INTO email_outbox (id, recipient, template, code, expires_at) "
                    f"SELECT gen_random_uuid(), '{recipient}', 'recovery_code', '01234567', now() + interval '10 minutes' "
                    f"FROM generate_series(1, {MESSAGES})")
        started = time.monotonic()
        stack.restart("session-service")
        mailbox.wait_for(recipient, count=MESSAGES, timeout=600)
        elapsed = time.monotonic() - started
        print(f"outbox: {MESSAGES} messages delivered to the local relay in {elapsed:.2f} s "
              f"({MESSAGES / elapsed:.0f} messages/s, one worker, one SMTP connection and one transaction each; "
              f"includes session-service's start)")

        # POST /v1/recovery: a verified address (a code row and a message written) and an unknown one (nothing).
        unknown = f"nobody-{uuid.uuid4().hex[:8]}@example.com"
        times = {"verified": [], "unknown": []}
        for index in range(STARTS * 2):
            kind = "verified" if index % 2 == 0 else "unknown"
            began = time.perf_counter()
            response = client.call("POST", "/v1/recovery", {"email": address if kind == "verified" else unknown})
            times[kind].append((time.perf_counter() - began) * 1000)
            assert response.status == 202
        report("POST /v1/recovery", times)

        # POST /v1/recovery/finish with a wrong code: a verified address with a live code (an attempt counted against
        # it) and an unknown one. Every verified address gets a code first, and its mail is out before the timing
        # starts; each takes five wrong attempts, its limit.
        verified = []
        for _ in range(max(1, STARTS // 5)):
            other, other_token = client.create_password_account()
            code = mailbox.latest_code(other)
            assert client.call("POST", "/v1/account/email/verify", {"code": code}, token=other_token).status == 204
            assert client.call("POST", "/v1/recovery", {"email": other}).status == 202
            verified.append(other)
        for other in verified:
            mailbox.wait_for(other, count=2)
        times = {"verified": [], "unknown": []}
        for index in range(len(verified) * 5 * 2):
            kind = "verified" if index % 2 == 0 else "unknown"
            email = verified[index // 10] if kind == "verified" else unknown
            began = time.perf_counter()
            response = client.call("POST", "/v1/recovery/finish", {"email": email, "code": "99999999"})
            times[kind].append((time.perf_counter() - began) * 1000)
            assert response.status == 400
        report("POST /v1/recovery/finish, a wrong code", times)
    finally:
        stack.stop()
        mailbox.stop()


main()
