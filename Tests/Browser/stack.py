"""The real stack for browser tests (Tests/Support/python/passkey_stack.py), with the rate limits off: the tests
sign in and out far faster than a person."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "Support" / "python"))

from passkey_stack import ROOT, Stack as _Stack  # noqa: E402

__all__ = ["ROOT", "Stack"]

RATE_LIMITS_OFF = {
    "PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL": "0",
    "PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS": "0",
    "PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS": "0",
    "PASSKEY_RATE_LIMIT_START_PER_ADDRESS": "0",
    "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "0",
}


def Stack():
    return _Stack("browser", environment=RATE_LIMITS_OFF)
