"""The real stack for browser tests (Tests/Support/python/passkey_stack.py), with the rate limits off: the tests
sign in and out far faster than a person. A second origin on the relying party ID (`second_origin`, another port of
localhost) is an allowed origin and a CORS origin, for pages that call the gateway from elsewhere."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "Support" / "python"))

from passkey_stack import ROOT, Stack as _Stack, free_port  # noqa: E402

__all__ = ["ROOT", "Stack"]

RATE_LIMITS_OFF = {
    "PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL": "0",
    "PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS": "0",
    "PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS": "0",
    "PASSKEY_RATE_LIMIT_START_PER_ADDRESS": "0",
    "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "0",
}


def Stack():
    stack = _Stack("browser", environment=RATE_LIMITS_OFF)
    stack.second_origin = f"http://localhost:{free_port()}"
    stack.extra.update({
        "PASSKEY_ORIGINS": f"{stack.origin},{stack.second_origin}",
        "PASSKEY_CORS_ORIGINS": stack.second_origin,
    })
    return stack
