"""The page's WebAuthn Signal API calls (Level 3 §5.1.10) in a real Chromium against the real stack.

A script installed before every document (CDP Page.addScriptToEvaluateOnNewDocument) wraps
PublicKeyCredential.signalAllAcceptedCredentials, signalCurrentUserDetails and signalUnknownCredential: each call is
recorded with its arguments and then passed on to Chromium's own. The tests assert which calls the page made, with
what, and which it did not make."""
import base64
import json
import os
import subprocess
import urllib.request

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.virtual_authenticator import Credential
from selenium.webdriver.support import expected_conditions as EC

from chromium import virtual_authenticator_options
from test_browser_flows import fill, passkey_names, signed_in, status_text, unique_email, wait, wait_for_status

SIGNALS = ("signalAllAcceptedCredentials", "signalCurrentUserDetails", "signalUnknownCredential")

SPY = """
(() => {
  const calls = [];
  const available = {};
  Object.defineProperty(window, "__signalCalls", { value: calls });
  Object.defineProperty(window, "__signalAvailable", { value: available });
  if (!window.PublicKeyCredential) return;
  for (const name of %s) {
    const original = PublicKeyCredential[name];
    available[name] = typeof original === "function";
    if (typeof original !== "function") continue;
    PublicKeyCredential[name] = function (options) {
      const status = document.getElementById("status");
      calls.push({ name, options: JSON.parse(JSON.stringify(options)), status: status ? status.textContent : "" });
      return original.call(this, options);
    };
  }
})();
""" % json.dumps(list(SIGNALS))


def b64url(data):
    """base64url without padding, as the page and the gateway write it; Selenium's Credential gives padded text."""
    if isinstance(data, str):
        return data.rstrip("=")
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def new_p256_key():
    """A fresh P-256 private key as PKCS #8 DER, made by the openssl command line."""
    pem = subprocess.run(
        ["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"], check=True, capture_output=True
    ).stdout
    return subprocess.run(
        ["openssl", "pkcs8", "-topk8", "-nocrypt", "-outform", "DER"], input=pem, check=True, capture_output=True
    ).stdout


@pytest.fixture
def spied(browser):
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": SPY})
    return browser


def calls(browser, name=None):
    recorded = browser.execute_script("return window.__signalCalls || []")
    return [call for call in recorded if name is None or call["name"] == name]


def api(stack, method, path, token=None, body=None):
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        stack.origin + path, data=None if body is None else json.dumps(body).encode(), headers=headers, method=method
    )
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read() or b"null")


def token(browser):
    """The page's access token, which it keeps in memory only (the page's `passkeyDemo.tokens`, the PasskeyClient's)."""
    return browser.execute_script("return passkeyDemo.tokens.access")


def create_passkey_account(browser, stack, name="Signal Tester"):
    browser.get(stack.origin + "/")
    email = unique_email("signal")
    fill(browser, "passkey-account-email", email)
    fill(browser, "passkey-account-name", name)
    browser.find_element(By.ID, "create-passkey-account").click()
    signed_in(browser)
    wait_for_status(browser, "Account created. Signed in with your new passkey")
    return email


def test_chromium_exposes_the_signal_api(spied, stack):
    spied.get(stack.origin + "/")
    exposed = spied.execute_script(
        "return Object.fromEntries(%s.map((n) => [n, typeof PublicKeyCredential[n]]))" % json.dumps(list(SIGNALS))
    )
    assert exposed == {name: "function" for name in SIGNALS}
    assert spied.execute_script("return window.__signalAvailable") == {name: True for name in SIGNALS}


def test_a_sign_in_signals_exactly_the_accounts_passkeys(spied, stack):
    create_passkey_account(spied, stack)
    wait(spied).until(lambda b: calls(b, "signalAllAcceptedCredentials"), "no signalAllAcceptedCredentials")
    account = api(stack, "GET", "/v1/account", token=token(spied))
    stored = [b64url(credential.id) for credential in spied.get_credentials()]
    assert len(stored) == 1
    accepted = calls(spied, "signalAllAcceptedCredentials")
    assert len(accepted) == 1, accepted
    assert accepted[0]["options"] == {
        "rpId": "localhost",
        "userId": account["userHandle"],
        "allAcceptedCredentialIds": stored,
    }
    # Called once the session was shown, and nothing else was signalled.
    assert calls(spied, "signalUnknownCredential") == []
    assert calls(spied, "signalCurrentUserDetails") == []


def test_removing_a_passkey_signals_the_ones_left(spied, stack):
    create_passkey_account(spied, stack, name="Two Devices")
    first = b64url(spied.get_credentials()[0].id)
    # A second device: another authenticator, since the first one already holds a passkey for this account.
    spied.remove_virtual_authenticator()
    spied.add_virtual_authenticator(virtual_authenticator_options())
    spied.find_element(By.ID, "add-passkey").click()
    wait_for_status(spied, "Passkey added")
    wait(spied).until(lambda b: len(passkey_names(b)) == 2)
    second = b64url(spied.get_credentials()[0].id)
    before = len(calls(spied, "signalAllAcceptedCredentials"))
    # Adding a passkey is not a sign-in or a removal: no new signal.
    assert before == 1

    listed = api(stack, "GET", "/v1/passkeys", token=token(spied))
    position = [passkey["credentialID"] for passkey in listed["passkeys"]].index(first) + 1
    spied.find_element(By.CSS_SELECTOR, f"#passkeys li:nth-child({position}) button[aria-label^='Remove']").click()
    wait(spied).until(EC.alert_is_present()).accept()
    wait_for_status(spied, "removed")
    wait(spied).until(lambda b: len(calls(b, "signalAllAcceptedCredentials")) == before + 1)
    last = calls(spied, "signalAllAcceptedCredentials")[-1]["options"]
    assert last["allAcceptedCredentialIds"] == [second]
    assert last["userId"] == listed["userHandle"]
    assert last["rpId"] == "localhost"

    # A removal the server refuses (the account's last passkey) changes nothing, so nothing is signalled.
    spied.find_element(By.CSS_SELECTOR, "#passkeys li button[aria-label^='Remove']").click()
    wait(spied).until(EC.alert_is_present()).accept()
    wait_for_status(spied, "only way to sign in")
    assert len(calls(spied, "signalAllAcceptedCredentials")) == before + 1
    assert calls(spied, "signalUnknownCredential") == []


def test_a_display_name_change_signals_the_current_user_details(spied, stack):
    email = create_passkey_account(spied, stack, name="Old Name")
    assert calls(spied, "signalCurrentUserDetails") == []
    fill(spied, "display-name", "New Name")
    spied.find_element(By.ID, "change-display-name").click()
    wait_for_status(spied, "Your name is now New Name")
    details = calls(spied, "signalCurrentUserDetails")
    assert len(details) == 1, details
    account = api(stack, "GET", "/v1/account", token=token(spied))
    assert details[0]["options"] == {
        "rpId": "localhost",
        "userId": account["userHandle"],
        "name": email,
        "displayName": "New Name",
    }
    assert "New Name" in spied.find_element(By.ID, "who").text

    # A name the server refuses signals nothing.
    spied.execute_script("document.getElementById('display-name').removeAttribute('required')")
    fill(spied, "display-name", " ")
    spied.find_element(By.ID, "change-display-name").click()
    wait(spied).until(lambda b: "missing or malformed" in status_text(b))
    assert len(calls(spied, "signalCurrentUserDetails")) == 1
    assert calls(spied, "signalUnknownCredential") == []


def sign_in_with_the_button(browser):
    browser.find_element(By.ID, "passkey-sign-in").click()


def test_a_credential_the_server_does_not_know_is_signalled_unknown(spied, stack):
    # A passkey in the browser whose credential ID the server never registered (deleted there, say): a resident
    # credential put straight into the virtual authenticator, with a key it made for a real account.
    create_passkey_account(spied, stack, name="Orphan")
    real = spied.get_credentials()[0]
    spied.remove_virtual_authenticator()
    spied.add_virtual_authenticator(virtual_authenticator_options())
    orphan_id = os.urandom(32)
    spied.add_credential(
        Credential.create_resident_credential(orphan_id, "localhost", unb64(real.user_handle), new_p256_key(), 0)
    )
    # A reload signs out (the page keeps its tokens in memory only) and starts the autofill sign-in.
    spied.get(stack.origin + "/")
    wait(spied).until(lambda b: calls(b, "signalUnknownCredential"), "no signalUnknownCredential")
    unknown = calls(spied, "signalUnknownCredential")
    assert unknown[0]["options"] == {"rpId": "localhost", "credentialId": b64url(orphan_id)}
    wait_for_status(spied, "not registered here any more")
    assert calls(spied, "signalAllAcceptedCredentials") == []


def test_other_sign_in_failures_signal_nothing(spied, stack):
    # The account's real credential ID, but a key that is not its: the server knows the credential and the
    # signature fails. That must never look like an unknown credential.
    create_passkey_account(spied, stack, name="Impostor")
    real = spied.get_credentials()[0]
    spied.remove_virtual_authenticator()
    spied.add_virtual_authenticator(virtual_authenticator_options())
    impostor = Credential.create_resident_credential(
        unb64(real.id), "localhost", unb64(real.user_handle), new_p256_key(), 0
    )
    spied.add_credential(impostor)
    spied.get(stack.origin + "/")
    wait(spied).until(lambda b: "could not be verified" in status_text(b) or "not right" in status_text(b))
    assert calls(spied, "signalUnknownCredential") == []
    assert calls(spied, "signalAllAcceptedCredentials") == []


def test_the_enroll_and_manage_pages_open_on_their_sections(browser, stack):
    endpoints = api(stack, "GET", "/.well-known/passkey-endpoints")
    assert endpoints == {"enroll": stack.origin + "/passkeys/enroll", "manage": stack.origin + "/passkeys/manage"}, endpoints

    # Signed out, each asks for a sign-in first; the plain page does not.
    def hint(b):
        element = b.find_element(By.ID, "section-hint")
        return element.text if element.is_displayed() else ""

    browser.get(endpoints["enroll"])
    wait(browser).until(lambda b: "Sign in to add a passkey" in hint(b))
    browser.get(endpoints["manage"])
    wait(browser).until(lambda b: "Sign in to manage your passkeys" in hint(b))
    browser.get(stack.origin + "/")
    wait(browser).until(lambda b: b.find_element(By.ID, "signed-out").is_displayed())
    assert hint(browser) == ""

    # Signed in, enroll focuses adding a passkey and manage the passkey list.
    browser.get(stack.origin + "/")
    fill(browser, "passkey-account-email", unique_email("sections"))
    fill(browser, "passkey-account-name", "Sections")
    browser.find_element(By.ID, "create-passkey-account").click()
    signed_in(browser)
    browser.get(endpoints["enroll"])
    signed_in(browser)
    wait(browser).until(lambda b: b.switch_to.active_element.get_attribute("id") == "add-passkey")
    assert "Add a passkey to your account" in status_text(browser)
    browser.get(endpoints["manage"])
    signed_in(browser)
    wait(browser).until(lambda b: b.switch_to.active_element.get_attribute("id") == "passkeys-title")
    browser.get(stack.origin + "/")
    signed_in(browser)
    wait(browser).until(lambda b: b.switch_to.active_element.get_attribute("id") != "passkeys-title")


def test_every_flow_works_in_a_browser_without_the_signal_api(browser, stack):
    # As in browsers that have not shipped it: the three functions are gone before the page's scripts run.
    browser.execute_cdp_cmd(
        "Page.addScriptToEvaluateOnNewDocument",
        {"source": "for (const n of %s) { delete PublicKeyCredential[n]; }" % json.dumps(list(SIGNALS))},
    )
    email = create_passkey_account(browser, stack, name="No Signals")
    assert browser.execute_script("return typeof PublicKeyCredential.signalUnknownCredential") == "undefined"
    fill(browser, "display-name", "Still Works")
    browser.find_element(By.ID, "change-display-name").click()
    wait_for_status(browser, "Your name is now Still Works")
    browser.remove_virtual_authenticator()
    browser.add_virtual_authenticator(virtual_authenticator_options())
    browser.find_element(By.ID, "add-passkey").click()
    wait_for_status(browser, "Passkey added")
    wait(browser).until(lambda b: len(passkey_names(b)) == 2)
    browser.find_element(By.CSS_SELECTOR, "#passkeys li:first-child button[aria-label^='Remove']").click()
    wait(browser).until(EC.alert_is_present()).accept()
    wait_for_status(browser, "removed")
    wait(browser).until(lambda b: len(passkey_names(b)) == 1)
    assert email in browser.find_element(By.ID, "who").text
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE" and "favicon" not in entry["message"]]
    assert errors == [], errors
