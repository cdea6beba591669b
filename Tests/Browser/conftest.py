import os
import pathlib
import shutil

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.virtual_authenticator import Protocol, Transport, VirtualAuthenticatorOptions

from stack import ROOT, Stack

ARTIFACTS = ROOT / ".build" / "browser-artifacts"


@pytest.fixture(scope="session")
def stack():
    running = Stack().start()
    yield running
    running.stop()


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


@pytest.fixture
def browser(request, stack):
    options = webdriver.ChromeOptions()
    options.binary_location = chromium_binary()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1000,1400"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    driver.implicitly_wait(0)
    driver.add_virtual_authenticator(virtual_authenticator_options())
    yield driver
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(ARTIFACTS / f"{request.node.name}.png"))
        logs = "\n".join(str(entry) for entry in driver.get_log("browser"))
        (ARTIFACTS / f"{request.node.name}.browser.log").write_text(logs)
        (ARTIFACTS / f"{request.node.name}.stack.log").write_text(stack.log_text())
    driver.quit()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)
