"""The demo page's "lost your passkey?" path in a real Chromium with a WebAuthn virtual authenticator: the emailed
code gives a recovery session, the new passkey ends it and signs in."""

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from conftest import Client


def wait_for_status(browser, fragment):
    WebDriverWait(browser, 15).until(
        lambda b: fragment in b.find_element(By.ID, "status").text, f"status never said {fragment!r}")


def fill(browser, field_id, value):
    element = browser.find_element(By.ID, field_id)
    element.clear()
    element.send_keys(value)


def verified_password_account(client, mailbox):
    """A password account whose email is verified: (address, session token)."""
    address, token = client.create_password_account()
    code = mailbox.latest_code(address)
    assert client.call("POST", "/v1/account/email/verify", {"code": code}, token=token).status == 204
    return address, token


def test_lost_passkey_path_recovers_the_account_with_a_new_passkey(browser, stack, mailbox):
    client = Client(stack)
    address, token = verified_password_account(client, mailbox)

    browser.get(stack.origin + "/")
    # One step at a time: the code's form and the passkey step wait for their turn.
    assert not browser.find_element(By.ID, "recovery-finish-form").is_displayed()
    assert not browser.find_element(By.ID, "recovery-passkey").is_displayed()
    fill(browser, "recovery-email", address)
    browser.find_element(By.ID, "recovery-send-code").click()
    wait_for_status(browser, "a code is on its way")
    recovery_code = mailbox.latest_code(address, count=2)
    fill(browser, "recovery-code", recovery_code)
    browser.find_element(By.ID, "recovery-continue").click()
    wait_for_status(browser, "Code accepted")
    assert not browser.find_element(By.ID, "recovery-finish-form").is_displayed()
    browser.find_element(By.ID, "recovery-create-passkey").click()
    wait_for_status(browser, "Your new passkey is saved")
    WebDriverWait(browser, 15).until(EC.visibility_of_element_located((By.ID, "signed-in")))
    WebDriverWait(browser, 15).until(lambda b: "Passkeys" in b.find_element(By.ID, "who").text)
    assert "Signed in with\npasskey" in browser.find_element(By.ID, "who").text
    assert "Your email is verified" in browser.find_element(By.ID, "email-status").text
    assert not browser.find_element(By.ID, "email-verify-form").is_displayed()
    # The password session from before the recovery was revoked; the recovery session ended with the passkey.
    assert client.call("GET", "/v1/session", token=token).status == 401
    live = stack.sql("SELECT authentication_method FROM authentication_sessions s JOIN account_emails e "
                       f"ON e.account_id = s.account_id WHERE e.email = '{address}' AND s.revoked_at IS NULL")
    assert live == [["passkey"]]

    # Signed in: recovery codes, shown once.
    browser.find_element(By.ID, "generate-recovery-codes").click()
    browser.switch_to.alert.accept()
    wait_for_status(browser, "shown only once")
    codes = [item.text for item in browser.find_elements(By.CSS_SELECTOR, "#recovery-codes li")]
    assert len(codes) == 10
    assert "10 unused recovery codes" in browser.find_element(By.ID, "recovery-codes-status").text


def test_a_recovery_ends_with_a_new_password_on_the_page(browser, stack, mailbox):
    client = Client(stack)
    address, token = verified_password_account(client, mailbox)

    browser.get(stack.origin + "/")
    fill(browser, "recovery-email", address)
    browser.find_element(By.ID, "recovery-send-code").click()
    wait_for_status(browser, "a code is on its way")
    fill(browser, "recovery-code", mailbox.latest_code(address, count=2))
    browser.find_element(By.ID, "recovery-continue").click()
    wait_for_status(browser, "Code accepted")
    fill(browser, "recovery-new-password", "password123")
    browser.find_element(By.ID, "recovery-set-password").click()
    wait_for_status(browser, "one of the most common ones")
    fill(browser, "recovery-new-password", "a recovered passphrase")
    browser.find_element(By.ID, "recovery-set-password").click()
    wait_for_status(browser, "Your new password is set")
    WebDriverWait(browser, 15).until(EC.visibility_of_element_located((By.ID, "signed-in")))
    assert "Signed in with\npassword" in browser.find_element(By.ID, "who").text
    assert stack.request("POST", "/v1/sessions/password", {"email": address, "password": "a recovered passphrase"}) \
        .status == 200
    assert client.call("GET", "/v1/session", token=token).status == 401
