"""The passkey/import image against the container stack's database: accounts from standard input, with a bcrypt
hash made by Python's bcrypt, sign in through the stack's gateway; a bad line is rejected and named; a second run
of the same input changes nothing.

Runs between test_grpc_tls.py and test_rollout.py on the same stack and leaves the replicas as they are."""

from __future__ import annotations

import json
import secrets
import shlex
import subprocess
import urllib.error
import urllib.request

import bcrypt

from conftest import CONTAINERS_DIR

RUN_ID = secrets.token_hex(4)
EMAIL = f"imported-{RUN_ID}@example.com"
PASSWORD = "correct horse battery staple"


def users() -> bytes:
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=10)).decode()
    lines = [
        {"email": EMAIL, "displayName": "Imported", "passwordHash": hashed, "externalID": f"legacy-{RUN_ID}"},
        {"email": f"other-{RUN_ID}@example.com"},
        {"email": "not an email"},
    ]
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def run_import(stack, data: bytes) -> subprocess.CompletedProcess:
    """deploy/containers/lib.sh's run_import with DATA on its standard input."""
    script = f"set -uo pipefail; source {shlex.quote(str(CONTAINERS_DIR / 'lib.sh'))}; run_import --format jsonl -"
    return subprocess.run(["bash", "-c", script], input=data, env=stack.environment, capture_output=True,
                          timeout=120)


def password_sign_in(stack, email: str, password: str) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"{stack.gateway_url}/v1/sessions/password", method="POST",
        data=json.dumps({"email": email, "password": password}).encode(),
        headers={"Content-Type": "application/json", "Origin": stack.origin})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def test_imported_accounts_sign_in_through_the_stack(stack):
    data = users()
    first = run_import(stack, data)
    output = first.stderr.decode() + first.stdout.decode()
    # One line rejected: exit status 1, and the reason is in the summary.
    assert first.returncode == 1, output
    assert "imported 2, skipped as unchanged 0, rejected 1" in output, output
    assert "rejected invalid_email: 1" in output, output

    status, body = password_sign_in(stack, EMAIL, PASSWORD)
    assert status == 200, body
    assert body.get("accessToken"), body
    status, body = password_sign_in(stack, EMAIL, "wrong password")
    assert status == 401, body

    # The same input again: nothing changes (the good lines are unchanged, the bad one is rejected again).
    second = run_import(stack, data)
    output = second.stderr.decode() + second.stdout.decode()
    assert second.returncode == 1, output
    assert "imported 0, skipped as unchanged 2, rejected 1" in output, output
    assert "nothing changed" in output, output
