"""The readiness suite: a database that answers but cannot run what sign-ins run (here a PL/pgSQL trigger function
failing as it did when Postgres's packages were upgraded under a running server, SQLSTATE 58P01) takes the
services out of readiness, and the requests that meet it are answered 503 unavailable with Retry-After, not 500."""

import pathlib
import sys

import pytest

TESTS = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "Support" / "python"))

from passkey_stack import Stack  # noqa: E402


@pytest.fixture
def stack():
    running = Stack("readiness", environment={
        "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS": "0",
    }).start()
    yield running
    running.stop()
