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


def session_count(browser):
    return len(browser.find_elements(By.CSS_SELECTOR, "#sessions li"))


def test_passkey_account_creation_signs_in_with_one_ceremony(browser, stack):
    browser.get(stack.origin + "/")
    fill(browser, "passkey-account-email", unique_email("grace"))
    fill(browser, "passkey-account-name", "Grace Hopper")
    browser.find_element(By.ID, "create-passkey-account").click()
    signed_in(browser)
    assert "Grace Hopper" in browser.find_element(By.ID, "who").text
    assert "passkey" in browser.find_element(By.ID, "who").text
    assert len(passkey_names(browser)) == 1
    # The creation's own session: no second ceremony signed in after it.
    wait_for_status(browser, "Account created. Signed in with your new passkey as Grace Hopper")
    assert session_count(browser) == 1

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

    # A fresh visit (the tokens lived in the last page's memory only), signed out, is offered the passkey through
    # autofill again.
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


def test_a_password_is_changed_and_an_old_sign_in_confirms_with_its_passkey_first(browser, stack):
    email = unique_email("change")
    browser.get(stack.origin + "/")
    fill(browser, "password-sign-up-email", email)
    fill(browser, "password-sign-up-name", "Changing")
    fill(browser, "password-sign-up-password", "correct horse battery")
    browser.find_element(By.ID, "password-sign-up").click()
    signed_in(browser)
    assert browser.find_element(By.ID, "password-form-title").text == "Change your password"
    fill(browser, "new-password", "password123")
    browser.find_element(By.ID, "set-password").click()
    wait_for_status(browser, "one of the most common ones")
    fill(browser, "new-password", "a fresher passphrase")
    browser.find_element(By.ID, "set-password").click()
    wait_for_status(browser, "Password changed; 0 other session(s) signed out")

    browser.find_element(By.ID, "add-passkey").click()
    wait_for_status(browser, "Passkey added")
    # The session's sign-in is now an hour old: the change needs a fresh one, which the page gets from the passkey.
    stack.sql("UPDATE authentication_sessions SET created_at = created_at - interval '1 hour' WHERE account_id = "
              f"(SELECT account_id FROM account_emails WHERE email = '{email}')")
    fill(browser, "new-password", "the freshest passphrase")
    browser.find_element(By.ID, "set-password").click()
    wait_for_status(browser, "Password changed")
    reauthenticated = stack.sql(
        "SELECT detail->>'method' FROM audit_events WHERE type = 'audit.session.reauthenticated' AND account_id = "
        f"(SELECT account_id FROM account_emails WHERE email = '{email}')")
    assert reauthenticated == [["passkey"]]
    signed_in_again = stack.request(
        "POST", "/v1/sessions/password", {"email": email, "password": "the freshest passphrase"})
    assert signed_in_again.status == 200


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


def tokens(browser):
    """The page's in-memory tokens (the page's `passkeyDemo.tokens`, the PasskeyClient's)."""
    return browser.execute_script("return Object.assign({}, passkeyDemo.tokens)")


def sign_up_with_a_password(browser, stack, prefix):
    browser.get(stack.origin + "/")
    fill(browser, "password-sign-up-email", unique_email(prefix))
    fill(browser, "password-sign-up-name", "Token Keeper")
    fill(browser, "password-sign-up-password", "correct horse battery")
    browser.find_element(By.ID, "password-sign-up").click()
    signed_in(browser)


def test_the_tokens_live_in_memory_only(browser, stack):
    sign_up_with_a_password(browser, stack, "memory")
    held = tokens(browser)
    assert held["access"] and held["refresh"].startswith("prt_"), held
    stored = browser.execute_script(
        "return JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])")
    assert held["access"] not in stored and held["refresh"] not in stored, stored
    # A reload forgets them: signed out.
    browser.get(stack.origin + "/")
    wait(browser).until(EC.visibility_of_element_located((By.ID, "signed-out")))
    assert tokens(browser)["access"] is None


def test_an_expired_access_token_is_refreshed_once_for_the_calls_that_need_it(browser, stack):
    sign_up_with_a_password(browser, stack, "refresh")
    before = tokens(browser)
    # As if ten minutes had passed: the signed-in view's four calls at once share one refresh.
    browser.execute_script("passkeyDemo.tokens.expiresAt = Date.now() - 1000")
    browser.execute_script(
        "window.__refreshes = 0; const f = window.fetch; window.fetch = (url, init) => {"
        " if (String(url).endsWith('/v1/session/refresh')) window.__refreshes += 1; return f(url, init); }")
    browser.execute_async_script("const done = arguments[arguments.length - 1]; passkeyDemo.showAccount().then(() => done())")
    after = tokens(browser)
    assert browser.execute_script("return window.__refreshes") == 1
    assert after["access"] != before["access"] and after["refresh"] != before["refresh"]
    assert after["expiresAt"] > before["expiresAt"]
    # The new token is fresh: the next call needs no refresh.
    fill(browser, "display-name", "Fresh Name")
    browser.find_element(By.ID, "change-display-name").click()
    wait_for_status(browser, "Your name is now Fresh Name")
    assert browser.execute_script("return window.__refreshes") == 1


def test_a_refused_access_token_is_refreshed_and_the_call_retried(browser, stack):
    sign_up_with_a_password(browser, stack, "refused")
    before = tokens(browser)
    browser.execute_script("passkeyDemo.tokens.access = 'not-a-token'")
    fill(browser, "display-name", "Retried")
    browser.find_element(By.ID, "change-display-name").click()
    wait_for_status(browser, "Your name is now Retried")
    after = tokens(browser)
    assert after["access"] != "not-a-token" and after["refresh"] != before["refresh"]


def test_a_session_ended_elsewhere_signs_the_page_out_at_its_refresh(browser, stack):
    sign_up_with_a_password(browser, stack, "ended")
    access = tokens(browser)["access"]
    # Signed out from elsewhere with the same access token: the session is over.
    request = urllib.request.Request(
        stack.origin + "/v1/session", headers={"Authorization": f"Bearer {access}"}, method="DELETE")
    urllib.request.urlopen(request).read()
    browser.execute_script("passkeyDemo.tokens.expiresAt = Date.now() - 1000")
    fill(browser, "display-name", "Too Late")
    browser.find_element(By.ID, "change-display-name").click()
    wait_for_status(browser, "Your session has ended")
    wait(browser).until(EC.visibility_of_element_located((By.ID, "signed-out")))
    assert tokens(browser)["access"] is None and tokens(browser)["refresh"] is None


def test_a_page_on_an_ip_address_explains_why_passkeys_cannot_work(browser, stack):
    browser.get(stack.base_url + "/")
    warning = wait(browser).until(EC.visibility_of_element_located((By.ID, "address-warning")))
    assert "IP address 127.0.0.1" in warning.text and "relying party ID" in warning.text, warning.text
    link = warning.find_element(By.TAG_NAME, "a")
    assert link.get_attribute("href") == stack.origin + "/", link.get_attribute("href")

    browser.get(stack.origin + "/")
    wait(browser).until(EC.visibility_of_element_located((By.ID, "signed-out")))
    assert not browser.find_element(By.ID, "address-warning").is_displayed()
