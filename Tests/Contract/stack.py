"""The real stack for the contract tests (Tests/Support/python/passkey_stack.py), with the deployment's default
rate limits."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "Support" / "python"))

from passkey_stack import ROOT, Response, Stack as _Stack  # noqa: E402

__all__ = ["ROOT", "Response", "Stack"]


def Stack():
    return _Stack("contract", environment={
        "EVENT_LOOP_THREADS": "1",
        # The suite's own calls (minting tokens) name a client address of their own in X-Forwarded-For, so the
        # requests schemathesis makes from 127.0.0.1 meet the rate limits alone.
        "PASSKEY_TRUSTED_PROXIES": "127.0.0.1",
    })
