import pytest

from stack import Stack  # first: it puts Tests/Support/python on the path
import chromium  # noqa: E402


@pytest.fixture(scope="session")
def stack():
    running = Stack().start()
    yield running
    running.stop()


@pytest.fixture
def browser(request, stack):
    driver = chromium.start()
    yield driver
    chromium.keep_artifacts_if_failed(request, driver, stack)
    driver.quit()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    chromium.record_reports(item, outcome)
