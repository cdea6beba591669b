"""Every flow of the demo page in a real Chromium with a WebAuthn virtual authenticator (CTAP2, internal, resident
keys, user verification), against the real stack."""
import json
import urllib.request
import uuid

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from chromium import virtual_authenticator_options


def unique_email(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}@example.com"


def wait(browser, seconds=15):
    return WebDriverWait(browser, seconds)


def status_text(browser):
    return browser.find_element(By.ID, "status").text


def wait_for_status(browser, fragment):
    wait(browser).until(lambda b: fragment in status_text(b), f"status never said {fragment!r}")


def fill(browser, field_id, value):
    element = browser.find_element(By.ID, field_id)
    element.clear()
    element.send_keys(value)


def signed_in(browser):
    wait(browser).until(EC.visibility_of_element_located((By.ID, "signed-in")))
    wait(browser).until(lambda b: "Name" in b.find_element(By.ID, "who").text)


def sign_out_and_sign_back_in_through_autofill(browser):
    """Signs out. The signed-out page starts a conditional-mediation request on the field with
    autocomplete="username webauthn"; the virtual authenticator answers it at once with the account's passkey, which
    is the autofill sign-in."""
    browser.find_element(By.ID, "sign-out").click()
    wait_for_status(browser, "Signed in with a passkey")
    signed_in(browser)


def passkey_names(browser):
    return [item.text.split("\n")[0] for item in browser.find_elements(By.CSS_SELECTOR, "#passkeys li")]


def test_passkey_account_creation_then_sign_in(browser, stack):
    browser.get(stack.origin + "/")
    fill(browser, "passkey-account-email", unique_email("grace"))
    fill(browser, "passkey-account-name", "Grace Hopper")
    browser.find_element(By.ID, "create-passkey-account").click()
    signed_in(browser)
    assert "Grace Hopper" in browser.find_element(By.ID, "who").text
    assert "passkey" in browser.find_element(By.ID, "who").text
    assert len(passkey_names(browser)) == 1
    # The account's creation ended with a sign-in by the button path (a modal request).
    assert "Signed in with a passkey" in status_text(browser)

    sign_out_and_sign_back_in_through_autofill(browser)
    who = browser.find_element(By.ID, "who").text
    assert "Grace Hopper" in who and "passkey" in who


def test_password_sign_up_add_passkey_sign_out_and_passkey_sign_in(browser, stack):
    browser.get(stack.origin + "/")
    email = unique_email("ada")
    fill(browser, "password-sign-up-email", email)
    fill(browser, "password-sign-up-name", "Ada Lovelace")
    fill(browser, "password-sign-up-password", "correct horse battery")
    browser.find_element(By.ID, "password-sign-up").click()
    signed_in(browser)
    assert "password" in browser.find_element(By.ID, "who").text

    browser.find_element(By.ID, "add-passkey").click()
    wait_for_status(browser, "Passkey added")
    assert len(passkey_names(browser)) == 1

    sign_out_and_sign_back_in_through_autofill(browser)
    who = browser.find_element(By.ID, "who").text
    assert "Ada Lovelace" in who and email in who and "passkey" in who

    # A fresh visit, signed out, is offered the passkey through autofill again.
    browser.execute_script("sessionStorage.clear()")
    browser.get(stack.origin + "/")
    wait_for_status(browser, "Signed in with a passkey")
    assert "Ada Lovelace" in browser.find_element(By.ID, "who").text


def test_a_password_user_removes_the_password_after_a_passkey_sign_in(browser, stack):
    browser.get(stack.origin + "/")
    fill(browser, "password-sign-up-email", unique_email("stage3"))
    fill(browser, "password-sign-up-name", "Stage Three")
    fill(browser, "password-sign-up-password", "correct horse battery")
    browser.find_element(By.ID, "password-sign-up").click()
    signed_in(browser)
    assert not browser.find_element(By.ID, "remove-password").is_displayed(), "offered without a passkey"

    browser.find_element(By.ID, "add-passkey").click()
    wait_for_status(browser, "Passkey added")
    wait(browser).until(EC.visibility_of_element_located((By.ID, "remove-password"))).click()
    wait(browser).until(EC.alert_is_present()).accept()
    wait_for_status(browser, "Sign in with your passkey once before removing your password")
    assert "Password\nyes" in browser.find_element(By.ID, "who").text

    sign_out_and_sign_back_in_through_autofill(browser)
    wait(browser).until(EC.visibility_of_element_located((By.ID, "remove-password"))).click()
    wait(browser).until(EC.alert_is_present()).accept()
    wait_for_status(browser, "Password removed")
    wait(browser).until(lambda b: "Password\nno" in b.find_element(By.ID, "who").text)
    assert not browser.find_element(By.ID, "remove-password").is_displayed()
    assert "passkeys only" in browser.find_element(By.ID, "password-status").text


def test_rename_and_remove_passkeys(browser, stack):
    browser.get(stack.origin + "/")
    fill(browser, "passkey-account-email", unique_email("rename"))
    fill(browser, "passkey-account-name", "Renamer")
    browser.find_element(By.ID, "create-passkey-account").click()
    signed_in(browser)
    wait(browser).until(lambda b: len(passkey_names(b)) == 1)

    # The only passkey of a passkey-only account is its last way to sign in.
    browser.find_element(By.CSS_SELECTOR, "#passkeys li button[aria-label^='Remove']").click()
    wait(browser).until(EC.alert_is_present()).accept()
    wait_for_status(browser, "only way to sign in")
    assert len(passkey_names(browser)) == 1

    # A second device: another authenticator, since the first one already holds a passkey for this account.
    browser.remove_virtual_authenticator()
    browser.add_virtual_authenticator(virtual_authenticator_options())
    browser.find_element(By.ID, "add-passkey").click()
    wait_for_status(browser, "Passkey added")
    wait(browser).until(lambda b: len(passkey_names(b)) == 2)

    browser.find_element(By.CSS_SELECTOR, "#passkeys li:first-child button[aria-label^='Rename']").click()
    prompt = wait(browser).until(EC.alert_is_present())
    prompt.send_keys("Work laptop")
    prompt.accept()
    wait_for_status(browser, "renamed to Work laptop")
    assert "Work laptop" in passkey_names(browser)

    browser.find_element(By.CSS_SELECTOR, "#passkeys li:last-child button[aria-label^='Remove']").click()
    wait(browser).until(EC.alert_is_present()).accept()
    wait_for_status(browser, "removed")
    wait(browser).until(lambda b: len(passkey_names(b)) == 1)
    assert passkey_names(browser) == ["Work laptop"]


def test_revoke_sessions(browser, stack):
    email = unique_email("sessions")
    request = urllib.request.Request(
        stack.origin + "/v1/accounts/password",
        data=json.dumps({"email": email, "password": "correct horse battery", "displayName": "Sessions"}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    urllib.request.urlopen(request).read()
    # Another device's session, made through the API.
    sign_in = urllib.request.Request(
        stack.origin + "/v1/sessions/password",
        data=json.dumps({"email": email, "password": "correct horse battery"}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    other_token = json.loads(urllib.request.urlopen(sign_in).read())["accessToken"]

    browser.get(stack.origin + "/")
    fill(browser, "password-sign-in-email", email)
    fill(browser, "password-sign-in-password", "correct horse battery")
    browser.find_element(By.ID, "password-sign-in").click()
    signed_in(browser)
    wait(browser).until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#sessions li")) == 2)
    browser.find_element(By.CSS_SELECTOR, "#sessions button[aria-label^='Revoke']").click()
    wait_for_status(browser, "Session revoked")
    wait(browser).until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#sessions li")) == 1)

    check = urllib.request.Request(stack.origin + "/v1/session", headers={"Authorization": f"Bearer {other_token}"})
    try:
        urllib.request.urlopen(check)
        raise AssertionError("the revoked session still works")
    except urllib.error.HTTPError as error:
        assert error.code == 401
