"""The web module (`/passkey/v1/passkey.js`) in a real Chromium with a virtual authenticator, driven from a page on a
second origin that imports it from the gateway (and from a vendored copy): sign-up, sign-in, autofill, adding a
passkey after a password sign-in, removal and the signals, a refreshed token, and the fallbacks for a browser without
the WebAuthn JSON methods. The gateway's own page is built on the same module (test_browser_flows.py)."""
import http.server
import json
import re
import threading
import urllib.parse
import urllib.request

import pytest

from stack import ROOT
import chromium
from test_browser_flows import unique_email, wait
from test_signal_api import SPY

MODULE = ROOT / "Services" / "Gateway" / "Core" / "Web" / "passkey.js"
TYPES = ROOT / "Services" / "Gateway" / "Core" / "Web" / "passkey.d.ts"

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>An app on another origin</title></head>
<body>
<input id="username" autocomplete="username webauthn">
<script type="module">
  import * as passkey from "%(module)s";
  window.passkey = passkey;
  window.client = new passkey.PasskeyClient({ baseURL: "%(gateway)s" });
  window.ready = true;
</script>
</body></html>
"""

# Removes the WebAuthn JSON methods, as on a browser that predates them: the module must decode and encode itself.
WITHOUT_JSON_METHODS = """
(() => {
  if (!window.PublicKeyCredential) return;
  delete PublicKeyCredential.parseCreationOptionsFromJSON;
  delete PublicKeyCredential.parseRequestOptionsFromJSON;
  delete PublicKeyCredential.prototype.toJSON;
  delete PublicKeyCredential.getClientCapabilities;
})();
"""


class SecondOrigin:
    """The app's own server on the second origin: `/` imports the module from the gateway, `/vendored.html` from
    its own copy at `/passkey.js`."""

    def __init__(self, origin, gateway):
        pages = {
            "/": ("text/html", (PAGE % {"module": f"{gateway}/passkey/v1/passkey.js", "gateway": gateway}).encode()),
            "/vendored.html": ("text/html", (PAGE % {"module": "/passkey.js", "gateway": gateway}).encode()),
            "/passkey.js": ("text/javascript", MODULE.read_bytes()),
        }

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                content_type, body = pages.get(self.path, ("text/plain", None))
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *arguments):
                pass

        port = urllib.parse.urlsplit(origin).port
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def app(stack):
    server = SecondOrigin(stack.second_origin, stack.origin)
    yield stack.second_origin
    server.close()


def open_app(browser, app, path="/", before=None):
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": SPY})
    if before:
        browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": before})
    browser.get(app + path)
    wait(browser).until(lambda b: b.execute_script("return window.ready === true"), "the module never loaded")


def run(browser, body):
    """Runs `body` (async JavaScript, `client` and `passkey` in scope) in the page: its value, or raises with the
    error's name, code and message."""
    result = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        f"(async () => {{ {body} }})().then((value) => done({{ value }}),"
        " (e) => done({ error: { name: e.name, code: e.code, reason: e.reason, message: String(e.message) } }));")
    if "error" in result:
        raise AssertionError(f"the page failed: {result['error']}")
    return result.get("value")


def failure(browser, body):
    """The error `body` fails with (name, code, reason), asserting that it fails."""
    result = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        f"(async () => {{ {body} }})().then(() => done(null),"
        " (e) => done({ name: e.name, code: e.code || null, reason: e.reason || null }));")
    assert result is not None, "it succeeded"
    return result


def signals(browser, name):
    return [call["options"] for call in browser.execute_script("return window.__signalCalls || []")
            if call["name"] == name]


def test_the_module_and_its_types_are_served_at_their_versioned_path(stack):
    with urllib.request.urlopen(stack.origin + "/passkey/v1/passkey.js") as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "text/javascript; charset=utf-8"
        assert response.headers["Access-Control-Allow-Origin"] == "*"
        assert response.read() == MODULE.read_bytes()
    with urllib.request.urlopen(stack.origin + "/passkey/v1/passkey.d.ts") as response:
        assert response.headers["Content-Type"] == "application/typescript; charset=utf-8"
        assert response.read() == TYPES.read_bytes()
    # Every export of the module is typed, and every type names an export.
    exported = set(re.findall(r"^export (?:async )?(?:class|function|const) (\w+)", MODULE.read_text(), re.MULTILINE))
    typed = set(re.findall(r"^export declare (?:class|function|const) (\w+)", TYPES.read_text(), re.MULTILINE))
    assert exported == typed and "PasskeyClient" in exported
    # The module has no dependency: it imports nothing.
    assert not re.search(r"^\s*import\b", MODULE.read_text(), re.MULTILINE)
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(stack.origin + "/passkey/v2/passkey.js")
    assert missing.value.code == 404


def test_sign_up_sign_out_and_sign_in_from_a_second_origin(browser, app):
    open_app(browser, app)
    email = unique_email("module")
    session = run(browser, f"return await client.signUp({{ email: {json.dumps(email)}, displayName: 'Module' }});")
    assert session["displayName"] == "Module" and session["accessToken"]
    # The passkey was made on the second origin, for the relying party ID, and the account is signed in.
    assert run(browser, "return (await client.call('GET', '/v1/account')).emails;") == [email]
    listed = run(browser, "return await client.passkeys();")
    assert len(listed["passkeys"]) == 1 and listed["rpID"] == "localhost"
    run(browser, "await client.signOut(); return client.signedIn;")
    assert run(browser, "return client.tokens.access;") is None
    again = run(browser, "return await client.signIn();")
    assert again["accountID"] == session["accountID"]
    # Signed out, a call that needs the session is refused with the server's problem.
    run(browser, "client.forgetSession();")
    assert failure(browser, "await client.call('GET', '/v1/account');") == {
        "name": "PasskeyProblem", "code": "unauthenticated", "reason": None}


def test_autofill_signs_in_through_conditional_mediation(browser, app):
    open_app(browser, app)
    run(browser, f"await client.signUp({{ email: {json.dumps(unique_email('autofill'))}, displayName: 'Auto' }});"
                 " client.forgetSession();")
    session = run(browser, "return await new Promise((resolve, reject) => client.startAutofill(resolve, reject)"
                           ".then((started) => { if (!started) reject(new Error('no conditional mediation')); }));")
    assert session["displayName"] == "Auto"
    assert run(browser, "return client.signedIn;") is True


def password_sign_in(browser, email):
    run(browser, f"""
        client.keepSession(await client.call('POST', '/v1/sessions/password',
            {{ email: {json.dumps(email)}, password: 'correct horse battery' }}));""")


def test_a_password_account_adds_and_removes_a_passkey_with_the_signals(browser, app, stack):
    open_app(browser, app)
    email = unique_email("adder")
    run(browser, f"""
        await client.call('POST', '/v1/accounts/password',
            {{ email: {json.dumps(email)}, displayName: 'Adder', password: 'correct horse battery' }});""")
    password_sign_in(browser, email)
    run(browser, "await client.addPasskey();")
    listed = run(browser, "return await client.passkeys();")
    assert len(listed["passkeys"]) == 1
    credential = listed["passkeys"][0]["credentialID"]
    # Removed behind the module's back: the authenticator still holds it, and signing in with it is
    # unknown_credential, the one failure the module passes on to the provider.
    token = run(browser, "return client.tokens.access;")
    request = urllib.request.Request(
        f"{stack.origin}/v1/passkeys/{credential}", headers={"Authorization": f"Bearer {token}"}, method="DELETE")
    urllib.request.urlopen(request).read()
    run(browser, "client.forgetSession();")
    assert failure(browser, "await client.signIn();") == {
        "name": "PasskeyProblem", "code": "invalid_credentials", "reason": "unknown_credential"}
    assert signals(browser, "signalUnknownCredential") == [{"rpId": "localhost", "credentialId": credential}]
    assert signals(browser, "signalAllAcceptedCredentials") == []
    # Removed through the module: the provider is told the passkeys the account still accepts, none.
    password_sign_in(browser, email)
    run(browser, "await client.addPasskey();")
    added = run(browser, "return (await client.passkeys()).passkeys[0].credentialID;")
    left = run(browser, f"return await client.removePasskey({json.dumps(added)});")
    assert left["passkeys"] == []
    assert signals(browser, "signalAllAcceptedCredentials") == [
        {"rpId": "localhost", "userId": listed["userHandle"], "allAcceptedCredentialIds": []}]


# Chromium waits on a conditional create until its password manager has a reason to offer one, which a virtual
# authenticator never gives: the wrapper records the mediation asked for and lets the virtual authenticator answer.
CONDITIONAL_CREATE = """
(() => {
  window.__createMediations = [];
  const create = navigator.credentials.create.bind(navigator.credentials);
  navigator.credentials.create = (options) => {
    window.__createMediations.push(options.mediation || "required");
    const { mediation, ...modal } = options;
    return create(modal);
  };
})();
"""

NO_CONDITIONAL_CREATE = """
PublicKeyCredential.getClientCapabilities = async () => ({ conditionalGet: true, conditionalCreate: false });
"""


def password_account(browser):
    email = unique_email("upgrade")
    run(browser, f"""
        await client.call('POST', '/v1/accounts/password',
            {{ email: {json.dumps(email)}, displayName: 'Upgrade', password: 'correct horse battery' }});""")
    password_sign_in(browser, email)


def test_a_password_sign_in_is_upgraded_to_a_passkey_where_the_browser_can(browser, app):
    open_app(browser, app, before=CONDITIONAL_CREATE)
    password_account(browser)
    assert run(browser, "return await client.upgrade();") is True
    assert browser.execute_script("return window.__createMediations") == ["conditional"]
    assert len(run(browser, "return (await client.passkeys()).passkeys;")) == 1


def test_no_upgrade_is_tried_where_the_browser_cannot(browser, app):
    open_app(browser, app, before=CONDITIONAL_CREATE + NO_CONDITIONAL_CREATE)
    password_account(browser)
    assert run(browser, "return await client.upgrade();") is False
    assert browser.execute_script("return window.__createMediations") == []
    assert run(browser, "return (await client.passkeys()).passkeys;") == []


def test_renaming_the_account_tells_the_provider(browser, app):
    open_app(browser, app)
    session = run(browser, f"return await client.signUp({{ email: {json.dumps(unique_email('rename'))}, "
                           "displayName: 'Before' });")
    account = run(browser, "return await client.renameAccount('After');")
    assert account["displayName"] == "After"
    details = signals(browser, "signalCurrentUserDetails")[-1]
    assert details["rpId"] == "localhost" and details["displayName"] == "After"
    assert session["accountID"]


def test_an_expired_access_token_is_refreshed_before_the_call(browser, app):
    open_app(browser, app)
    run(browser, f"await client.signUp({{ email: {json.dumps(unique_email('fresh'))}, displayName: 'Fresh' }});")
    before = run(browser, "return Object.assign({}, client.tokens);")
    assert before["refresh"].startswith("prt_")
    run(browser, "client.tokens.expiresAt = Date.now() - 1000;"
                 " await Promise.all([client.call('GET', '/v1/account'), client.call('GET', '/v1/passkeys')]);")
    after = run(browser, "return Object.assign({}, client.tokens);")
    assert after["access"] != before["access"] and after["refresh"] != before["refresh"]
    # A refused token: refreshed and the call retried once.
    run(browser, "client.tokens.access = 'not-a-token'; await client.call('GET', '/v1/account');")
    assert run(browser, "return client.tokens.access;") not in ("not-a-token", after["access"])


def test_a_vendored_copy_without_the_json_methods_still_works(browser, app):
    open_app(browser, app, "/vendored.html", before=WITHOUT_JSON_METHODS)
    assert run(browser, "return typeof PublicKeyCredential.parseCreationOptionsFromJSON;") == "undefined"
    email = unique_email("fallback")
    session = run(browser, f"return await client.signUp({{ email: {json.dumps(email)}, displayName: 'Old' }});")
    run(browser, "client.forgetSession();")
    assert run(browser, "return (await client.signIn()).accountID;") == session["accountID"]
    assert run(browser, "return passkey.toBase64URL(passkey.fromBase64URL('AAEC_-8'));") == "AAEC_-8"
    assert failure(browser, "passkey.fromBase64URL('not base64!');")["name"] == "TypeError"
