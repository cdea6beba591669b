"""Headless Chromium for the browser tests (Debian's chromium and chromium-driver, through selenium): a driver, with
or without a virtual platform authenticator, and what a failed test leaves behind (a screenshot, the browser's
console and the stack's logs in .build/browser-artifacts)."""

import shutil

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.virtual_authenticator import Protocol, Transport, VirtualAuthenticatorOptions

from passkey_stack import ROOT

ARTIFACTS = ROOT / ".build" / "browser-artifacts"


def chromium_binary():
    for candidate in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(candidate)
        if path:
            return path
    pytest.fail("Chromium is not installed (apt-get install chromium chromium-driver)")


def virtual_authenticator_options():
    """A platform authenticator: CTAP2, internal transport, resident keys, user verification that succeeds."""
    options = VirtualAuthenticatorOptions()
    options.protocol = Protocol.CTAP2
    options.transport = Transport.INTERNAL
    options.has_resident_key = True
    options.has_user_verification = True
    options.is_user_verified = True
    options.is_user_consenting = True
    return options


def start(authenticator=True, width=1000):
    """A headless Chromium driver; with `authenticator`, a virtual platform authenticator added."""
    options = webdriver.ChromeOptions()
    options.binary_location = chromium_binary()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={width},1400"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    driver.implicitly_wait(0)
    if authenticator:
        driver.add_virtual_authenticator(virtual_authenticator_options())
    return driver


def keep_artifacts_if_failed(request, driver, stack):
    """After a test: when it failed, its screenshot, the browser's console and the stack's logs."""
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(ARTIFACTS / f"{request.node.name}.png"))
        logs = "\n".join(str(entry) for entry in driver.get_log("browser"))
        (ARTIFACTS / f"{request.node.name}.browser.log").write_text(logs)
        (ARTIFACTS / f"{request.node.name}.stack.log").write_text(stack.log_text())


def record_reports(item, outcome):
    """For a conftest's `pytest_runtest_makereport` hook wrapper: each phase's report on the item, so that fixtures
    can tell whether the test failed."""
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)
