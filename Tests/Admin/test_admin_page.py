"""The operators' page at /admin/ on the admin listener, in headless Chromium against the real stack: an operator
pastes a token, finds an account, revokes its sessions, removes a passkey, disables and enables it; each result is
checked through the admin API and the public API. The page is served on the admin listener only, with a content
security policy that allows nothing but its own inline script and style and calls to its own origin."""

import base64
import hashlib
import os
import re
import sys
import urllib.request

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from test_admin_api import PASSWORD, Admin, make_token, password_account  # noqa: E402
from passkey_stack import Stack, free_port  # noqa: E402

import chromium  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@pytest.fixture(scope="module")
def stack():
    admin_port = free_port()
    the_stack = Stack("adminpage", environment={
        "ADMIN_LISTEN": f"127.0.0.1:{admin_port}", "PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS": "0",
        "PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL": "0", "PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS": "0",
        "PASSKEY_RATE_LIMIT_START_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "0"}).start()
    the_stack.admin = Admin(admin_port)
    yield the_stack
    exited = the_stack.exited()
    log = the_stack.log_text()
    the_stack.stop()
    assert not exited, log


@pytest.fixture(scope="module")
def tokens(stack):
    return {"support": make_token(stack, "read,write"), "read": make_token(stack, "read")}


@pytest.fixture
def browser(stack):
    # No authenticator: the page takes an admin token, not a passkey.
    driver = chromium.start(authenticator=False, width=1200)
    yield driver
    driver.quit()


def wait(browser, condition, seconds=15):
    return WebDriverWait(browser, seconds).until(lambda driver: condition())


def status(browser):
    return browser.find_element(By.ID, "status").text


def rows(browser, table):
    return browser.find_elements(By.CSS_SELECTOR, f"#{table} tbody tr")


def use_token(browser, token):
    browser.find_element(By.ID, "token").send_keys(token)
    browser.find_element(By.ID, "use-token").click()
    wait(browser, lambda: "in use" in browser.find_element(By.ID, "token-state").text)


def search(browser, query):
    field = browser.find_element(By.ID, "query")
    field.clear()
    field.send_keys(query)
    browser.find_element(By.ID, "search").click()


def test_the_page_is_served_on_the_admin_listener_only_with_a_strict_policy(stack):
    with urllib.request.urlopen(stack.admin.base + "/admin/", timeout=10) as response:
        assert response.status == 200
        headers = {name.lower(): value for name, value in response.headers.items()}
        page = response.read().decode()
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert headers["cache-control"] == "no-store" and headers["x-content-type-options"] == "nosniff"
    policy = dict(part.strip().split(" ", 1) for part in headers["content-security-policy"].split(";"))
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    styles = re.findall(r"<style>(.*?)</style>", page, re.S)
    assert len(scripts) == 1 and len(styles) == 1

    def digest(text):
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"
    assert policy == {"default-src": "'none'", "script-src": digest(scripts[0]), "style-src": digest(styles[0]),
                      "connect-src": "'self'", "base-uri": "'none'", "form-action": "'none'",
                      "frame-ancestors": "'none'"}
    # Self-contained: no external script, style, image or link, and no inline handler the policy would block.
    assert not re.search(r"\b(src|href)\s*=", page) and "<link" not in page and not re.search(r"\son\w+\s*=", page)
    # Not on the public listener; only GET and HEAD here.
    assert stack.request("GET", "/admin/").status == 404
    status, headers, _ = stack.admin.call("POST", "/admin/")
    assert status == 405
    assert stack.admin.call("HEAD", "/admin/")[0] == 200
    assert stack.admin.call("GET", "/admin")[0] == 404


def test_an_operator_finds_an_account_revokes_sessions_removes_a_passkey_and_disables_it(stack, tokens, browser):
    admin = stack.admin
    address, account_id, sessions, credential_id = password_account(stack)
    browser.get(stack.admin.base + "/admin/")
    assert browser.find_element(By.ID, "token-state").text == "no token"

    # A token without the write scope can look but not act; the refusal is shown.
    use_token(browser, tokens["read"])
    search(browser, address)
    wait(browser, lambda: browser.find_element(By.ID, "account-id").text == account_id)
    browser.find_element(By.ID, "toggle-disabled").click()
    wait(browser, lambda: "403 forbidden" in status(browser))
    assert admin.json("GET", f"/admin/v1/accounts/{account_id}", tokens["read"])["disabledAt"] is None
    browser.find_element(By.ID, "forget-token").click()
    assert browser.execute_script("return sessionStorage.length") == 0
    assert not browser.find_element(By.ID, "detail").is_displayed()

    use_token(browser, tokens["support"])
    # The token is kept in this tab's session storage only, and the field is cleared.
    assert browser.execute_script("return sessionStorage.getItem('passkey-admin-token')") == tokens["support"]
    assert browser.execute_script("return localStorage.length") == 0
    assert browser.find_element(By.ID, "token").get_attribute("value") == ""
    search(browser, account_id)
    wait(browser, lambda: browser.find_element(By.ID, "account-id").text == account_id)
    assert [item.text for item in browser.find_elements(By.CSS_SELECTOR, "#emails li")] == \
        [f"{address} (not verified)"]
    assert [row.get_attribute("data-credential") for row in rows(browser, "passkeys")] == [credential_id]
    shown = {row.get_attribute("data-session") for row in rows(browser, "sessions")}
    live = {session["sessionID"] for session in admin.json("GET", f"/admin/v1/accounts/{account_id}",
                                                           tokens["read"])["sessions"]}
    assert shown == live and len(shown) == 2

    # One session.
    first = stack.request("GET", "/v1/session", token=sessions[0]).json()["sessionID"]
    browser.find_element(By.CSS_SELECTOR, f'#sessions tr[data-session="{first}"] button.revoke-session').click()
    wait(browser, lambda: len(rows(browser, "sessions")) == 1)
    assert f"Revoked session {first}" in status(browser)
    assert stack.request("GET", "/v1/session", token=sessions[0]).status == 401
    assert stack.request("GET", "/v1/session", token=sessions[1]).status == 200

    # The passkey, in two clicks.
    remove = browser.find_element(By.CSS_SELECTOR, "#passkeys button.remove-passkey")
    remove.click()
    assert remove.text == "Confirm removal"
    assert len(admin.json("GET", f"/admin/v1/accounts/{account_id}", tokens["read"])["passkeys"]) == 1
    remove.click()
    wait(browser, lambda: len(rows(browser, "passkeys")) == 0)
    assert admin.json("GET", f"/admin/v1/accounts/{account_id}", tokens["read"])["passkeys"] == []

    # Disable (its last session ends with it), then enable.
    browser.find_element(By.ID, "toggle-disabled").click()
    wait(browser, lambda: browser.find_element(By.ID, "account-state").text.startswith("disabled since"))
    assert "revoked 1 session(s)" in status(browser)
    assert stack.request("GET", "/v1/session", token=sessions[1]).status == 401
    assert admin.json("GET", f"/admin/v1/accounts/{account_id}", tokens["read"])["disabledAt"] is not None
    refused = stack.request("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD})
    assert refused.status == 403
    browser.find_element(By.ID, "toggle-disabled").click()
    wait(browser, lambda: browser.find_element(By.ID, "account-state").text == "active")
    assert admin.json("GET", f"/admin/v1/accounts/{account_id}", tokens["read"])["disabledAt"] is None

    # A new sign-in, seen after a refresh, and every session revoked at once.
    signed_in = [stack.request("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD})
                 .json()["accessToken"] for _ in range(2)]
    browser.find_element(By.ID, "refresh").click()
    wait(browser, lambda: len(rows(browser, "sessions")) == 2)
    browser.find_element(By.ID, "revoke-all").click()
    wait(browser, lambda: len(rows(browser, "sessions")) == 0)
    assert "Revoked 2 session(s)" in status(browser)
    assert all(stack.request("GET", "/v1/session", token=token).status == 401 for token in signed_in)

    # The page broke no rule of its policy, and every change is the support token's in the audit trail.
    log = browser.get_log("browser")
    assert [entry for entry in log if "Content Security Policy" in entry["message"]] == []
    # No script error either (the refused call and the missing favicon are logged as failed loads).
    assert [entry for entry in log if entry["level"] == "SEVERE" and "Failed to load resource" not in entry["message"]
            and "favicon.ico" not in entry["message"]] == [], log
    token_id = tokens["support"].split("_")[1]
    events = admin.json("GET", f"/admin/v1/audit-events?accountID={account_id}&type=audit.session.revoked"
                        "&type=audit.passkey.removed&type=audit.account.disabled&type=audit.account.enabled",
                        tokens["read"])["events"]
    types = [event["type"] for event in events]
    assert [types.count(kind) for kind in ("audit.passkey.removed", "audit.account.disabled",
                                           "audit.account.enabled")] == [1, 1, 1], types
    # One session, then two at once (and the one the disable ended, if it is its own event).
    assert types.count("audit.session.revoked") >= 3, types
    assert {event["actorID"] for event in events} == {token_id}
    assert tokens["support"] not in stack.log_text()


def test_a_search_that_finds_nothing_or_cannot_be_a_search(stack, tokens, browser):
    browser.get(stack.admin.base + "/admin/")
    search(browser, "nobody@example.com")
    wait(browser, lambda: "Paste an admin token first" in status(browser))
    use_token(browser, tokens["read"])
    search(browser, "nobody@example.com")
    wait(browser, lambda: status(browser) == "No account found.")
    search(browser, "not a query!")
    wait(browser, lambda: "Enter an email address" in status(browser))
    browser.find_element(By.ID, "token").send_keys("not a token")
    browser.find_element(By.ID, "use-token").click()
    wait(browser, lambda: "That is not an admin token" in status(browser))
