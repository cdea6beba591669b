"""What a password sign-in costs per stored format, through the gateway of the real stack: for each format an account
whose hash Python's bcrypt, passlib, Django, Werkzeug or argon2-cffi made, and ROUNDS wrong-password sign-ins (wrong,
so the hash stays as it is), timed end to end. Printed next to the baselines of the same run: the current argon2id
and an email no account has (which must cost the same one argon2id verification)."""

import os
import pathlib
import statistics
import subprocess
import sys
import time
import uuid

TESTS = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "Support" / "python"))
sys.path.insert(0, str(TESTS / "LegacyPasswords"))

from passkey_stack import Stack  # noqa: E402

import argon2  # noqa: E402
from test_legacy_sign_in import FORMATS  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "15"))
PASSWORD = "benchmark password"


def timed(stack, targets):
    """ROUNDS wrong-password sign-ins for each target, interleaved (one of each per round) so that the machine's
    load falls on all of them alike: {name: (median ms, max ms)}."""
    samples = {name: [] for name in targets}
    for _ in range(ROUNDS):
        for name, email in targets.items():
            start = time.perf_counter()
            response = stack.request("POST", "/v1/sessions/password", {"email": email, "password": PASSWORD + "?"})
            samples[name].append((time.perf_counter() - start) * 1000)
            assert response.status == 401, response.body
    return {name: (statistics.median(values), max(values)) for name, values in samples.items()}


def main():
    stack = Stack("legacybench", environment={
        "PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL": "0",
        "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_SIGNUP_GLOBAL": "0"}).start()
    try:
        emails = {}
        current = argon2.PasswordHasher(time_cost=2, memory_cost=19456, parallelism=1).hash(PASSWORD)
        for name, make in [("argon2id (current)", lambda p: current)] + [(n, f[0]) for n, f in sorted(FORMATS.items())]:
            email = f"bench-{uuid.uuid4().hex[:10]}@example.com"
            created = stack.request("POST", "/v1/accounts/password",
                                    {"email": email, "password": "a placeholder password", "displayName": "Bench"})
            assert created.status == 201, created.body
            encoded = make(PASSWORD).replace("'", "''")
            stack.sql(f"UPDATE password_credentials SET password_hash = '{encoded}' "
                       f"WHERE account_id = '{created.json()['accountID']}'")
            emails[name] = email
        emails["unknown email (dummy argon2id)"] = f"nobody-{uuid.uuid4().hex}@example.com"
        timed(stack, {"warm-up": emails["argon2id (current)"]})
        results = timed(stack, emails)
        baseline = results["argon2id (current)"][0]
        print(f"wrong-password sign-ins through the gateway, {ROUNDS} each, interleaved: median ms (max), ratio to "
              "the current argon2id")
        for name in ["argon2id (current)", "unknown email (dummy argon2id)"] + sorted(FORMATS):
            median, worst = results[name]
            print(f"{name:34} {median:8.1f} ({worst:7.1f}) {median / baseline:6.2f}")
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
