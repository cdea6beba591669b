"""The demo page against a gateway in cookie mode (PASSKEY_REFRESH_COOKIE=true): the refresh token stays in an
HttpOnly cookie the page never sees, the page refreshes with an empty body, and a reload gets its access token from
the cookie."""
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC

from stack import RATE_LIMITS_OFF  # first: it puts Tests/Support/python on the path
from passkey_stack import Stack  # noqa: E402
from test_browser_flows import fill, signed_in, tokens, unique_email, wait, wait_for_status


@pytest.fixture(scope="module")
def stack():
    running = Stack("browser_cookie", environment={**RATE_LIMITS_OFF, "PASSKEY_REFRESH_COOKIE": "true"}).start()
    yield running
    running.stop()


def test_cookie_mode_keeps_the_refresh_token_out_of_the_page_and_survives_a_reload(browser, stack):
    browser.get(stack.origin + "/")
    fill(browser, "password-sign-up-email", unique_email("cookie"))
    fill(browser, "password-sign-up-name", "Cookie Jar")
    fill(browser, "password-sign-up-password", "correct horse battery")
    browser.find_element(By.ID, "password-sign-up").click()
    signed_in(browser)
    held = tokens(browser)
    assert held["access"] and held["refresh"] is None and held["cookie"] is True, held
    assert "passkey_refresh" not in browser.execute_script("return document.cookie"), "the cookie is HttpOnly"

    # An expired access token: refreshed with an empty body and the cookie.
    browser.execute_script("passkeyDemo.tokens.expiresAt = Date.now() - 1000")
    fill(browser, "display-name", "Cookie Monster")
    browser.find_element(By.ID, "change-display-name").click()
    wait_for_status(browser, "Your name is now Cookie Monster")
    refreshed = tokens(browser)
    assert refreshed["access"] != held["access"] and refreshed["refresh"] is None

    # A reload forgets the access token; the cookie gets a new one.
    browser.get(stack.origin + "/")
    signed_in(browser)
    assert "Cookie Monster" in browser.find_element(By.ID, "who").text
    assert tokens(browser)["access"] not in (None, refreshed["access"])

    # Signing out drops the cookie: a reload stays signed out.
    browser.find_element(By.ID, "sign-out").click()
    wait_for_status(browser, "Signed out")
    browser.get(stack.origin + "/")
    wait(browser).until(EC.visibility_of_element_located((By.ID, "signed-out")))
    assert tokens(browser)["access"] is None
