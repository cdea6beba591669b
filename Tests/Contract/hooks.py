"""Schemathesis hooks for the contract run (loaded by `st run` through schemathesis.toml's `hooks`).

- Bearer tokens are real: each comes from a password account signed in through the gateway. Routes that end the
  session they are called with (`DELETE /v1/session`) get a token of their own, and the shared token is checked
  and replaced whenever a call may have revoked it, so authenticated routes keep being exercised as signed in.
- Every response is recorded (method, path template, status, code) in CONTRACT_RESPONSES_FILE for the test to
  count.
- One check is added to schemathesis's own: a request that is valid by the schema is never refused as
  `invalid_request`. (A 400 `verification_failed` from a registration finish is a well-formed response that failed
  WebAuthn, which is why the config lets positive_data_acceptance take 400 on those two routes.)
"""

import itertools
import json
import os
import threading
import time
import urllib.error
import urllib.request
import uuid

import schemathesis

GATEWAY = os.environ["CONTRACT_GATEWAY_URL"]
RESPONSES = os.environ["CONTRACT_RESPONSES_FILE"]
# The account the suite made, with passkeys (conftest.py's `account`).
ACCOUNT_EMAIL = os.environ["CONTRACT_ACCOUNT_EMAIL"]
PASSWORD = os.environ["CONTRACT_ACCOUNT_PASSWORD"]

_addresses = itertools.count(1)
_record_lock = threading.Lock()


def _call(method, path, body=None, token=None):
    """One call to the gateway from a client address of its own (the gateway trusts 127.0.0.1 as a proxy)."""
    request = urllib.request.Request(
        GATEWAY + path, data=json.dumps(body).encode() if body is not None else None, method=method)
    request.add_header("Content-Type", "application/json")
    # A /64 of its own (the gateway counts an IPv6 client by its /64), apart from the fixtures' 2001:db8:18:1::/64.
    request.add_header("X-Forwarded-For", f"2001:db8:18:{0x1000 + next(_addresses):x}::1")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def _call_patiently(method, path, body=None, token=None):
    """_call, waiting out a 429 (a global limit may be spent by the run) a few times."""
    for _ in range(10):
        status, headers, payload = _call(method, path, body, token)
        if status != 429:
            return status, payload
        time.sleep(min(5, int(headers.get("Retry-After", "1"))))
    return status, payload


def _new_account():
    email = f"contract-{uuid.uuid4().hex}@example.com"
    status, payload = _call_patiently(
        "POST", "/v1/accounts/password", {"email": email, "password": PASSWORD, "displayName": "Contract"})
    assert status == 201, (status, payload)
    return email


def _sign_in(email):
    status, payload = _call_patiently("POST", "/v1/sessions/password", {"email": email, "password": PASSWORD})
    assert status == 200, (status, payload)
    return json.loads(payload)["accessToken"]


class _SharedSession:
    """The token most authenticated cases use, of the suite's account; checked again after anything that may have
    revoked it."""

    def __init__(self, email):
        self.lock = threading.Lock()
        self.email = email
        self.token = None
        self.suspect = False

    def get(self):
        with self.lock:
            if self.token is not None and self.suspect:
                status, _, _ = _call("GET", "/v1/session", token=self.token)
                if status == 401:
                    self.token = None
            self.suspect = False
            if self.token is None:
                self.token = _sign_in(self.email)
            return self.token

    def may_have_been_revoked(self):
        with self.lock:
            self.suspect = True


SHARED = _SharedSession(ACCOUNT_EMAIL)


@schemathesis.auth(refresh_interval=None)
class RealBearerToken:
    def get(self, case, ctx):
        if case.method.upper() == "DELETE" and case.path == "/v1/session":
            # Signing out ends the session it is called with: a session of a fresh account each time.
            return _sign_in(_new_account())
        return SHARED.get()

    def set(self, case, data, ctx):
        case.headers = case.headers or {}
        case.headers["Authorization"] = f"Bearer {data}"


@schemathesis.hook
def after_call(context, case, response):
    if case.method.upper() == "DELETE" and case.path.startswith("/v1/session") and response.status_code == 204:
        SHARED.may_have_been_revoked()
    code = None
    if response.headers.get("content-type", [""])[0].startswith("application/problem+json"):
        try:
            code = response.json().get("code")
        except ValueError:
            code = "unreadable"
    line = json.dumps({"method": case.method.upper(), "path": case.path, "status": response.status_code, "code": code})
    with _record_lock, open(RESPONSES, "a") as out:
        out.write(line + "\n")


@schemathesis.check
def schema_valid_requests_are_not_invalid_request(ctx, response, case):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 400:
        return None
    try:
        problem = response.json()
    except ValueError:
        problem = {}
    if problem.get("code") == "invalid_request":
        raise AssertionError(
            f"A request valid by the schema was refused as invalid_request: {problem.get('detail')}")
    return None
