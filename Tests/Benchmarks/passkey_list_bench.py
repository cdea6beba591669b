"""GET /v1/passkeys on this machine, against the real stack (Tests/Support/python/passkey_stack.py), next to baselines
from the same run: the listing validates the token (session-service), then verification-service reads the passkeys
and the account's user handle at once, and the gateway names each passkey's provider from the shipped list.
Baselines: GET /v1/session (the token check alone), GET /v1/account (the check and one session-service read), and a
provider icon (no service).

Run through Tests/Benchmarks/passkey-list-bench (it sets up DATABASE_URL and the venv). REQUESTS (default 500) of
each kind, interleaved, one at a time on a fresh connection each, with an account holding PASSKEYS (default 3)."""

import os
import pathlib
import statistics
import sys
import time
import uuid

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The contract suite's stack: the deployment's default rate limits.
sys.path.insert(0, str(ROOT / "Tests" / "Contract"))

from stack import Stack  # noqa: E402
from openssl_authenticator import registration_response  # noqa: E402

REQUESTS = int(os.environ.get("REQUESTS", "500"))
PASSKEYS = int(os.environ.get("PASSKEYS", "3"))
GOOGLE = "ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4"


def main():
    stack = Stack().start()
    try:
        email = f"bench-{uuid.uuid4().hex[:8]}@example.com"
        password = "benchmark password"
        assert stack.request("POST", "/v1/accounts/password",
                             {"email": email, "password": password, "displayName": "Bench"}).status == 201
        token = stack.request("POST", "/v1/sessions/password", {"email": email, "password": password}).json()[
            "accessToken"]
        origin = f"http://localhost:{stack.gateway_port}"
        for _ in range(PASSKEYS):
            start = stack.request("POST", "/v1/passkeys/registrations", {}, token=token).json()
            body = dict(registration_response(start, origin), challengeID=start["challengeID"])
            assert stack.request("POST", "/v1/passkeys/registrations/finish", body, token=token).status == 204
        kinds = {
            "GET /v1/session (token check only)": ("/v1/session", token),
            "GET /v1/account (check + one read)": ("/v1/account", token),
            "GET /v1/passkeys (check + one call reading two rows at once + provider names)": ("/v1/passkeys", token),
            "GET provider icon (no service)": (f"/v1/passkey-providers/{GOOGLE}/icons/light", None),
        }
        times = {kind: [] for kind in kinds}
        for kind, (path, bearer) in kinds.items():  # warm-up
            for _ in range(20):
                assert stack.request("GET", path, token=bearer).status == 200
        for _ in range(REQUESTS):
            for kind, (path, bearer) in kinds.items():
                started = time.perf_counter()
                response = stack.request("GET", path, token=bearer)
                times[kind].append((time.perf_counter() - started) * 1000)
                assert response.status == 200, (kind, response.status)
        listed = stack.request("GET", "/v1/passkeys", token=token).json()
        assert len(listed["passkeys"]) == PASSKEYS and "providerName" in listed["passkeys"][0]
        for kind, values in times.items():
            values.sort()
            print(f"{kind}: p50 {statistics.median(values):.2f} ms, p90 {values[int(len(values) * 0.9)]:.2f} ms, "
                  f"p99 {values[int(len(values) * 0.99)]:.2f} ms over {len(values)}")
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
