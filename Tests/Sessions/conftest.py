"""The session suite: signed access tokens, refresh tokens, signing-key rotation, CORS and the refresh cookie, tested
against the real processes the way another company's backend and a browser use them. Each test module starts the
stacks it needs with `sessions_support.running_stack` (a stack starts in about a second)."""

import pytest

import sessions_support  # noqa: F401  (first: it puts Tests/Support/python on the path)
import chromium


@pytest.fixture
def authenticator(tmp_path):
    """A software passkey that really signs."""
    return sessions_support.Authenticator(tmp_path)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    chromium.record_reports(item, outcome)
