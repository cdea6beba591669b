"""CORS and the refresh cookie, as a browser meets them: headless Chromium (selenium) on pages served by a small
HTTP server from other origins than the gateway's. http://localhost:PAGE is the same site as the gateway
(http://localhost:GATEWAY) but another origin, and is a listed CORS origin; http://127.0.0.1:PAGE is another site,
also listed; http://127.0.0.1:OTHER is another site and not listed. The plain HTTP checks of the same rules come
first."""

import http.server
import json
import threading

import pytest

import chromium
from sessions_support import (
    PASSWORD, RelyingBackend, create_password_account, free_port, problem, running_stack)

PAGE = b"<!doctype html><meta charset=utf-8><title>Another company's app</title><p>app"
COOKIE = "passkey_refresh"


class PageServer:
    """Serves the page at every path on 127.0.0.1:`port` (so under both localhost and 127.0.0.1)."""

    def __init__(self):
        self.port = free_port()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(PAGE)))
                self.end_headers()
                self.wfile.write(PAGE)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def pages():
    listed, unlisted = PageServer(), PageServer()
    yield {"same_site": f"http://localhost:{listed.port}", "cross_site": f"http://127.0.0.1:{listed.port}",
           "unlisted": f"http://127.0.0.1:{unlisted.port}"}
    listed.stop()
    unlisted.stop()


@pytest.fixture(scope="module")
def stack(pages):
    environment = {"PASSKEY_REFRESH_COOKIE": "true",
                   "PASSKEY_CORS_ORIGINS": f"{pages['same_site']},{pages['cross_site']}"}
    with running_stack("cookies", environment) as running:
        running.backend = RelyingBackend(running)
        yield running


@pytest.fixture
def browser(request, stack):
    driver = chromium.start(authenticator=False)
    driver.set_script_timeout(15)
    yield driver
    chromium.keep_artifacts_if_failed(request, driver, stack)
    driver.quit()


def header_values(response, name):
    return response.headers.get_all(name) or []


def set_cookie(response):
    [cookie] = [value for value in header_values(response, "set-cookie") if value.startswith(COOKIE + "=")]
    return cookie


# ---------------------------------------------------------------------------------------------------------------
# Plain HTTP


@pytest.mark.parametrize("method", ["POST", "GET", "DELETE"])
def test_a_preflight_from_a_listed_origin_is_answered(stack, pages, method):
    for origin in (pages["same_site"], pages["cross_site"]):
        answer = stack.request("OPTIONS", "/v1/session/refresh" if method == "POST" else "/v1/session", headers={
            "Origin": origin, "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": "authorization, content-type"})
        assert answer.status == 204, answer.body
        assert answer.headers["access-control-allow-origin"] == origin
        assert answer.headers["access-control-allow-credentials"] == "true"
        assert method in [m.strip() for m in answer.headers["access-control-allow-methods"].split(",")]
        allowed = [h.strip().lower() for h in answer.headers["access-control-allow-headers"].split(",")]
        assert "authorization" in allowed and "content-type" in allowed
        assert "Origin" in answer.headers["vary"]


@pytest.mark.parametrize("origin", ["unlisted", "https://evil.example", "null", "http://localhost"])
def test_a_preflight_from_any_other_origin_is_405_without_cors_headers(stack, pages, origin):
    origin = pages.get(origin, origin)
    answer = stack.request("OPTIONS", "/v1/session/refresh",
                           headers={"Origin": origin, "Access-Control-Request-Method": "POST"})
    assert problem(answer)[:2] == (405, "method_not_allowed")
    assert not [name for name in answer.headers if name.lower().startswith("access-control-")], answer.headers


def test_responses_carry_cors_headers_for_listed_origins_only(stack, pages):
    listed = stack.request("GET", "/.well-known/jwks.json", headers={"Origin": pages["same_site"]})
    assert listed.headers["access-control-allow-origin"] == pages["same_site"]
    assert listed.headers["access-control-allow-credentials"] == "true"
    assert "x-request-id" in listed.headers["access-control-expose-headers"]
    unlisted = stack.request("GET", "/.well-known/jwks.json", headers={"Origin": pages["unlisted"]})
    assert unlisted.status == 200
    assert not [name for name in unlisted.headers if name.lower().startswith("access-control-")]


def test_cookie_mode_serves_only_browsers_of_known_origins(stack, pages):
    address, _ = create_password_account(stack)
    # A browser on the relying party's own origin or a listed one: the refresh token goes into the cookie only.
    for origin in (stack.origin, pages["same_site"]):
        answer = stack.request("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD},
                               headers={"Origin": origin})
        assert answer.status == 200, answer.body
        assert "refreshToken" not in answer.json() and "refreshTokenExpiresAt" in answer.json()
        attributes = [part.strip() for part in set_cookie(answer).split(";")]
        assert attributes[0].startswith(f"{COOKIE}=prt_") and len(attributes[0]) == len(COOKIE) + 1 + 74
        assert {"Path=/v1/session/refresh", "HttpOnly", "Secure", "SameSite=Strict"} <= set(attributes)
        stack.backend.verify(answer.json()["accessToken"])
    # A native app (no Origin) or an unknown page: the token in the body, no cookie.
    for headers in ({}, {"Origin": pages["unlisted"]}):
        answer = stack.request("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD},
                               headers=headers)
        assert answer.status == 200 and answer.json()["refreshToken"].startswith("prt_")
        assert not header_values(answer, "set-cookie")


def test_the_cookie_is_used_only_from_an_allowed_origin(stack, pages):
    address, _ = create_password_account(stack)
    signed_in = stack.request("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD},
                              headers={"Origin": pages["same_site"]})
    cookie = set_cookie(signed_in).split(";")[0]
    for headers in ({}, {"Origin": pages["unlisted"]}, {"Origin": "https://evil.example"}, {"Origin": "null"}):
        refused = stack.request("POST", "/v1/session/refresh", headers={"Cookie": cookie, **headers})
        assert problem(refused)[:2] == (403, "forbidden"), (headers, refused.body)
    # The cookie was good all along: from the listed origin it refreshes, and a new cookie replaces it.
    refreshed = stack.request("POST", "/v1/session/refresh", headers={"Cookie": cookie, "Origin": pages["same_site"]})
    assert refreshed.status == 200, refreshed.body
    assert "refreshToken" not in refreshed.json()
    assert set_cookie(refreshed).split(";")[0] != cookie
    # A cookie that no longer works is cleared.
    bogus = f"{COOKIE}=prt_" + "A" * 70
    refused = stack.request("POST", "/v1/session/refresh", headers={"Cookie": bogus, "Origin": pages["same_site"]})
    assert problem(refused) == (401, "unauthenticated", "refresh_token_invalid")
    assert "Max-Age=0" in set_cookie(refused)


# ---------------------------------------------------------------------------------------------------------------
# A real browser

FETCH = """
const [url, options, done] = arguments;
fetch(url, options).then(async response => done({
    status: response.status, body: await response.text(),
    requestID: response.headers.get('x-request-id'), setCookie: response.headers.get('set-cookie'),
})).catch(error => done({error: String(error)}));
"""


def browser_fetch(driver, url, **options):
    return driver.execute_async_script(FETCH, url, {"credentials": "include", **options})


def refresh_cookies(driver):
    """The browser's refresh cookies, read through the DevTools protocol (the page cannot: they are HttpOnly)."""
    return [cookie for cookie in driver.execute_cdp_cmd("Network.getAllCookies", {})["cookies"]
            if cookie["name"] == COOKIE]



def test_a_page_of_another_origin_signs_in_and_refreshes_with_the_cookie(stack, pages, browser):
    address, account_id = create_password_account(stack)
    gateway = stack.origin
    browser.get(pages["same_site"] + "/")
    signed_in = browser_fetch(browser, gateway + "/v1/sessions/password", method="POST",
                              headers={"Content-Type": "application/json"},
                              body=json.dumps({"email": address, "password": PASSWORD}))
    assert signed_in.get("status") == 200, signed_in
    document = json.loads(signed_in["body"])
    assert "refreshToken" not in document and document["accountID"] == account_id
    assert signed_in["requestID"], "x-request-id is exposed to the page"
    assert signed_in["setCookie"] is None, "Set-Cookie is never readable by the page"
    stack.backend.verify(document["accessToken"])
    [cookie] = refresh_cookies(browser)
    assert cookie["httpOnly"] and cookie["secure"] and cookie["sameSite"] == "Strict"
    assert (cookie["domain"], cookie["path"]) == ("localhost", "/v1/session/refresh")
    assert cookie["value"].startswith("prt_")
    assert COOKIE not in browser.execute_script("return document.cookie")

    # Refresh with an empty body: the browser sends the cookie, the gateway rotates it.
    values = [cookie["value"]]
    for _ in range(2):
        refreshed = browser_fetch(browser, gateway + "/v1/session/refresh", method="POST")
        assert refreshed.get("status") == 200, refreshed
        renewed = json.loads(refreshed["body"])
        assert "refreshToken" not in renewed and renewed["sessionID"] == document["sessionID"]
        _, claims = stack.backend.verify(renewed["accessToken"])
        assert claims["sid"] == document["sessionID"]
        [cookie] = refresh_cookies(browser)
        assert cookie["value"] not in values
        values.append(cookie["value"])
    current = browser_fetch(browser, gateway + "/v1/session",
                            headers={"Authorization": "Bearer " + renewed["accessToken"]})
    assert current.get("status") == 200, current
    assert json.loads(current["body"])["sessionID"] == document["sessionID"]

    # Another site, though a listed origin: SameSite=Strict keeps the cookie home, so there is no token to use.
    browser.get(pages["cross_site"] + "/")
    refused = browser_fetch(browser, gateway + "/v1/session/refresh", method="POST")
    assert refused.get("status") == 401, refused
    assert json.loads(refused["body"])["reason"] == "refresh_token_invalid"
    # Another site, not listed: the browser does not let the page see any answer.
    browser.get(pages["unlisted"] + "/")
    blocked = browser_fetch(browser, gateway + "/v1/session/refresh", method="POST")
    assert "TypeError" in blocked.get("error", ""), blocked
    # Neither attempt used or changed the cookie: it still refreshes from the app's own origin.
    [cookie] = refresh_cookies(browser)
    assert cookie["value"] == values[-1]
    browser.get(pages["same_site"] + "/")
    again = browser_fetch(browser, gateway + "/v1/session/refresh", method="POST")
    assert again.get("status") == 200, again
