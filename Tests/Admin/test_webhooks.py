"""Webhooks against the real processes: endpoints registered through the admin API, audit events delivered to real
HTTP receivers (Python's http.server) and their Standard Webhooks signatures verified with the `standardwebhooks`
package, a receiver that is down for a while, a kill -9 of session-service mid-delivery, a slow receiver beside a
fast one, an endpoint that keeps failing and is disabled, and the SSRF guard on the resolved address."""

import http.server
import json
import sys
import threading
import time
import uuid

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from test_admin_api import Admin, make_token, problem  # noqa: E402

from passkey_stack import Stack, free_port  # noqa: E402  (on the path test_admin_api sets)

PASSWORD = "webhook suite password"
WEBHOOK_ENVIRONMENT = {
    "PASSKEY_WEBHOOK_ALLOW_HTTP": "true", "PASSKEY_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
    "PASSKEY_WEBHOOK_TIMEOUT": "2s", "PASSKEY_WEBHOOK_MAX_RETRY_DELAY": "1s", "PASSKEY_WEBHOOK_DISABLE_AFTER": "8s",
    "PASSKEY_TRUSTED_PROXIES": "127.0.0.1", "PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS": "0",
    "PASSKEY_RATE_LIMIT_ADMIN_PER_ADDRESS": "0",
    "PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL": "0", "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "0",
}


class Receiver:
    """An HTTP endpoint on a fixed loopback port that can be stopped and started again, answer slowly, or fail.
    It records every request, and which webhook-ids it acknowledged (answered 2xx to)."""

    def __init__(self, delay=0.0):
        self.port = free_port()
        self.delay = delay
        self.requests = []
        self.acknowledged = []
        self.lock = threading.Lock()
        self.server = None

    def start(self):
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with receiver.lock:
                    receiver.requests.append((dict(self.headers), body, time.monotonic()))
                if receiver.delay:
                    time.sleep(receiver.delay)
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()
                with receiver.lock:
                    receiver.acknowledged.append(self.headers["webhook-id"])

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/hooks"

    def events(self, secret):
        """Every request's verified payload (the signature checked as a receiver would)."""
        with self.lock:
            requests = list(self.requests)
        return [Webhook(secret).verify(body, headers) for headers, body, _ in requests]


@pytest.fixture(scope="module")
def stack():
    admin_port = free_port()
    the_stack = Stack("webhooks", environment={"ADMIN_LISTEN": f"127.0.0.1:{admin_port}", **WEBHOOK_ENVIRONMENT}).start()
    the_stack.admin = Admin(admin_port)
    the_stack.token = make_token(the_stack, "read,write,erase")
    yield the_stack
    exited = the_stack.exited()
    the_stack.stop()
    assert not exited, the_stack.log_text()


def register(stack, url, types, token=None, expect=201):
    body = json.dumps({"url": url, "eventTypes": types, "description": "test receiver"}).encode()
    status, _, answer = stack.admin.call("POST", "/admin/v1/webhooks", token or stack.token, body,
                                         {"Content-Type": "application/json"})
    assert status == expect, (status, answer)
    return json.loads(answer)


def endpoint(stack, webhook_id):
    return stack.admin.json("GET", f"/admin/v1/webhooks/{webhook_id}", stack.token)


def new_account(stack):
    """A password account, created and signed in: its ID."""
    address = f"hook-{uuid.uuid4().hex[:12]}@example.com"
    created = stack.request("POST", "/v1/accounts/password",
                            {"email": address, "password": PASSWORD, "displayName": "Hook"})
    assert created.status == 201, created.body
    signed_in = stack.request("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD})
    assert signed_in.status == 200, signed_in.body
    return stack.request("GET", "/v1/session", token=signed_in.json()["accessToken"]).json()["accountID"], address


def sign_in(stack, address):
    assert stack.request("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD}).status == 200


def stored_event_ids(stack, account_id, event_type):
    page = stack.admin.json("GET", f"/admin/v1/audit-events?accountID={account_id}&type={event_type}", stack.token)
    return {event["id"] for event in page["events"]}


def wait_for(condition, timeout, message):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, message()
        time.sleep(0.1)


def test_deliveries_are_signed_and_carry_the_stored_event(stack):
    receiver = Receiver().start()
    try:
        created = register(stack, receiver.url, ["audit.account.created", "audit.sign_in.succeeded"])
        secret = created["secret"]
        assert secret.startswith("whsec_") and created["pendingDeliveries"] == 0
        account_id, _ = new_account(stack)
        expected = stored_event_ids(stack, account_id, "audit.account.created") | stored_event_ids(
            stack, account_id, "audit.sign_in.succeeded")
        assert len(expected) == 2

        def mine():
            return [e for e in receiver.events(secret) if e["data"]["accountId"] == account_id]
        wait_for(lambda: len(mine()) == 2, 10, lambda: receiver.requests)
        events = mine()
        assert {e["data"]["eventId"] for e in events} == expected
        assert {e["type"] for e in events} == {"audit.account.created", "audit.sign_in.succeeded"}
        assert all(e["data"]["actor"] == "user" and e["timestamp"].endswith("Z") for e in events)
        headers, body, _ = receiver.requests[0]
        assert headers["webhook-id"].startswith("msg_") and headers["webhook-signature"].startswith("v1,")
        # The signature covers the body and the timestamp: a changed byte, another secret or an old timestamp fail.
        with pytest.raises(WebhookVerificationError):
            Webhook(secret).verify(body.replace(b"audit", b"auditX", 1), headers)
        with pytest.raises(WebhookVerificationError):
            Webhook("whsec_" + "A" * 43 + "=").verify(body, headers)
        with pytest.raises(WebhookVerificationError):
            Webhook(secret).verify(body, dict(headers, **{"webhook-timestamp": str(int(time.time()) - 3600)}))
        # The secret is shown once: listings and reads never carry it.
        listed = stack.admin.json("GET", "/admin/v1/webhooks", stack.token)["webhooks"]
        assert created["webhookID"] in [w["webhookID"] for w in listed]
        assert all("secret" not in w for w in listed)
        assert "secret" not in endpoint(stack, created["webhookID"])
        events = stack.admin.json("GET", "/admin/v1/audit-events?type=audit.webhook.created", stack.token)["events"]
        assert any(e["detail"]["webhook.id"] == created["webhookID"] and e["actor"] == "admin" for e in events)
        # Neither the secret nor the admin token is ever logged.
        logs = stack.log_text()
        assert secret not in logs and secret.removeprefix("whsec_") not in logs and stack.token not in logs
    finally:
        receiver.stop()
        stack.admin.call("DELETE", f"/admin/v1/webhooks/{created['webhookID']}", stack.token)


def test_a_receiver_down_for_a_while_gets_every_event_once_it_is_back(stack):
    receiver = Receiver().start()
    created = register(stack, receiver.url, ["audit.sign_in.succeeded"])
    try:
        account_id, address = new_account(stack)
        wait_for(lambda: len(receiver.requests) >= 1, 10, lambda: "no first delivery")
        receiver.stop()
        for _ in range(20):
            sign_in(stack, address)
        # While it is down the endpoint fails, backs off and keeps its deliveries.
        wait_for(lambda: endpoint(stack, created["webhookID"])["failingSince"] is not None, 10,
                 lambda: endpoint(stack, created["webhookID"]))
        assert endpoint(stack, created["webhookID"])["pendingDeliveries"] >= 20
        time.sleep(2)
        receiver.start()
        expected = stored_event_ids(stack, account_id, "audit.sign_in.succeeded")
        assert len(expected) == 21

        def received():
            return {e["data"]["eventId"] for e in receiver.events(created["secret"])}
        wait_for(lambda: expected <= received(), 20, lambda: (sorted(expected - received()), stack.log_text()[-3000:]))
        wait_for(lambda: endpoint(stack, created["webhookID"])["pendingDeliveries"] == 0, 10,
                 lambda: endpoint(stack, created["webhookID"]))
        state = endpoint(stack, created["webhookID"])
        assert state["failingSince"] is None and state["disabledAt"] is None
        # Nothing acknowledged was sent again.
        time.sleep(1)
        assert len(receiver.acknowledged) == len(set(receiver.acknowledged)), receiver.acknowledged
    finally:
        receiver.stop()
        stack.admin.call("DELETE", f"/admin/v1/webhooks/{created['webhookID']}", stack.token)


def test_a_kill_of_session_service_mid_delivery_loses_nothing(stack):
    # Each delivery takes 1.5 s to be answered, so the kill lands while one is in flight.
    receiver = Receiver(delay=1.5).start()
    created = register(stack, receiver.url, ["audit.sign_in.succeeded"])
    try:
        account_id, address = new_account(stack)
        for _ in range(5):
            sign_in(stack, address)
        wait_for(lambda: len(receiver.requests) >= 2, 15, lambda: receiver.requests)
        stack.kill("session-service")
        acknowledged_before = set(receiver.acknowledged)
        in_flight = {h["webhook-id"] for h, _, _ in receiver.requests} - acknowledged_before
        stack.restart("session-service")
        expected = stored_event_ids(stack, account_id, "audit.sign_in.succeeded")
        assert len(expected) == 6

        def received():
            return {e["data"]["eventId"] for e in receiver.events(created["secret"])}
        wait_for(lambda: expected <= received(), 40, lambda: (sorted(expected - received()), stack.log_text()[-3000:]))
        wait_for(lambda: endpoint(stack, created["webhookID"])["pendingDeliveries"] == 0, 20,
                 lambda: endpoint(stack, created["webhookID"]))
        # Only the one delivery in flight at the kill (one lane per endpoint) may have been sent twice: at least
        # once, never lost.
        counts = {}
        for headers, _, _ in receiver.requests:
            counts[headers["webhook-id"]] = counts.get(headers["webhook-id"], 0) + 1
        repeated = {message for message, count in counts.items() if count > 1}
        assert repeated <= in_flight | acknowledged_before, counts
        assert len(repeated) <= 1, counts
    finally:
        receiver.stop()
        stack.admin.call("DELETE", f"/admin/v1/webhooks/{created['webhookID']}", stack.token)


def test_a_slow_receiver_is_cut_off_and_never_delays_another(stack):
    slow = Receiver(delay=30).start()
    fast = Receiver().start()
    slow_hook = register(stack, slow.url, ["audit.sign_in.succeeded"])
    fast_hook = register(stack, fast.url, ["audit.sign_in.succeeded"])
    try:
        account_id, address = new_account(stack)
        wait_for(lambda: len(slow.requests) >= 1, 10, lambda: "the slow receiver got nothing")
        # The slow one holds a request now; the fast one keeps getting each event within a second.
        for _ in range(3):
            before = len(fast.requests)
            started = time.monotonic()
            sign_in(stack, address)
            wait_for(lambda: len(fast.requests) > before, 5, lambda: "the fast receiver waited")
            assert time.monotonic() - started < 1.5
        # The attempt is cut off at PASSKEY_WEBHOOK_TIMEOUT (2 s) and recorded as a failure, not left hanging.
        wait_for(lambda: endpoint(stack, slow_hook["webhookID"])["failingSince"] is not None, 6,
                 lambda: endpoint(stack, slow_hook["webhookID"]))
        first = slow.requests[0][2]
        wait_for(lambda: len(slow.requests) >= 2, 8, lambda: "no retry")
        assert slow.requests[1][2] - first < 2 + 5, "the retry came too late: the attempt was not cut off"
        assert slow.acknowledged == []
    finally:
        for receiver, hook in ((slow, slow_hook), (fast, fast_hook)):
            stack.admin.call("DELETE", f"/admin/v1/webhooks/{hook['webhookID']}", stack.token)
            receiver.stop()


def test_an_endpoint_failing_past_the_limit_is_disabled_audited_and_can_be_enabled(stack):
    closed = f"http://127.0.0.1:{free_port()}/nobody-listens"
    created = register(stack, closed, ["audit.sign_in.succeeded"])
    try:
        new_account(stack)
        wait_for(lambda: endpoint(stack, created["webhookID"])["disabledAt"] is not None, 20,
                 lambda: endpoint(stack, created["webhookID"]))
        state = endpoint(stack, created["webhookID"])
        assert "failing since" in state["disabledReason"] and state["pendingDeliveries"] >= 1
        events = stack.admin.json("GET", "/admin/v1/audit-events?type=audit.webhook.disabled", stack.token)["events"]
        disabled = [e for e in events if e["detail"]["webhook.id"] == created["webhookID"]]
        assert len(disabled) == 1 and disabled[0]["actor"] == "system", events
        # While disabled it gets no new deliveries.
        pending = state["pendingDeliveries"]
        new_account(stack)
        assert endpoint(stack, created["webhookID"])["pendingDeliveries"] == pending
        assert stack.admin.json("POST", f"/admin/v1/webhooks/{created['webhookID']}/enable", stack.token) == {
            "changed": True}
        assert stack.admin.json("POST", f"/admin/v1/webhooks/{created['webhookID']}/enable", stack.token) == {
            "changed": False}
        # Enabling clears the failure streak. The worker may try the pending deliveries again at once and fail
        # (nobody listens), which starts a new streak: never the old one.
        enabled = endpoint(stack, created["webhookID"])
        assert enabled["disabledAt"] is None and enabled["disabledReason"] is None
        assert enabled["failingSince"] is None or enabled["failingSince"] > state["failingSince"], (state, enabled)
    finally:
        stack.admin.call("DELETE", f"/admin/v1/webhooks/{created['webhookID']}", stack.token)
    status, _, _ = stack.admin.call("GET", f"/admin/v1/webhooks/{created['webhookID']}", stack.token)
    assert status == 404


def test_registration_refuses_bad_input_and_needs_the_write_scope(stack):
    read_only = make_token(stack, "read")
    body = json.dumps({"url": "http://127.0.0.1:9/x", "eventTypes": ["*"]}).encode()
    json_header = {"Content-Type": "application/json"}
    assert problem(stack.admin.call("POST", "/admin/v1/webhooks", None, body, json_header)) == (
        401, "unauthenticated")
    assert problem(stack.admin.call("POST", "/admin/v1/webhooks", read_only, body, json_header)) == (
        403, "forbidden")
    # The public port has no admin routes.
    assert stack.request("POST", "/admin/v1/webhooks", raw=body, token=stack.token).status == 404
    cases = [
        {"url": "ftp://127.0.0.1/x", "eventTypes": ["*"]},
        {"url": "http://user:secret@127.0.0.1:9/x", "eventTypes": ["*"]},
        {"url": "http://127.0.0.1:9/" + "a" * 2048, "eventTypes": ["*"]},
        {"url": "http://127.0.0.1:9/x#fragment", "eventTypes": ["*"]},
        {"url": "http://127.0.0.1:9/x", "eventTypes": []},
        {"url": "http://127.0.0.1:9/x", "eventTypes": ["audit.no_such.event"]},
        {"url": "http://127.0.0.1:9/x", "eventTypes": ["*", "*"]},
        {"url": "http://127.0.0.1:9/x", "eventTypes": "*"},
        {"url": "http://127.0.0.1:9/x", "eventTypes": ["*"], "secret": "mine"},
        {"url": "http://127.0.0.1:9/x", "eventTypes": ["*"], "description": "x" * 257},
        {"eventTypes": ["*"]},
    ]
    for case in cases:
        answer = stack.admin.call("POST", "/admin/v1/webhooks", stack.token, json.dumps(case).encode(), json_header)
        assert problem(answer) == (400, "invalid_request"), (case, answer)
    assert problem(stack.admin.call("POST", "/admin/v1/webhooks", stack.token, b"{", json_header)) == (
        400, "invalid_request")
    assert problem(stack.admin.call("POST", "/admin/v1/webhooks", stack.token, b"x" * 9000, json_header)) == (
        400, "invalid_request")
    assert problem(stack.admin.call("GET", "/admin/v1/webhooks/not-a-uuid", stack.token)) == (400, "invalid_request")
    assert problem(stack.admin.call("DELETE", f"/admin/v1/webhooks/{uuid.uuid4()}", stack.token)) == (404, "not_found")
    listed = stack.admin.json("GET", "/admin/v1/webhooks", stack.token)["webhooks"]
    assert all("127.0.0.1:9/" not in w["url"] for w in listed), listed


def test_the_destination_guard_refuses_internal_addresses_by_default(stack):
    """A stack with no allowed networks: loopback, 10/8, 169.254/16, ::1 and a name resolving to loopback are
    refused at registration, on the resolved address; https is required unless allowed."""
    admin_port = free_port()
    environment = {"ADMIN_LISTEN": f"127.0.0.1:{admin_port}", "PASSKEY_WEBHOOK_ALLOW_HTTP": "true"}
    guarded = Stack("webhook_guard", environment=environment).start()
    try:
        guarded.admin = Admin(admin_port)
        guarded.token = make_token(guarded, "read,write")
        for url, reason in [("http://127.0.0.1:8080/x", "loopback"), ("http://10.1.2.3/x", "private"),
                            ("http://169.254.169.254/latest/meta-data", "link-local"),
                            ("http://[::1]:8080/x", "loopback"), ("http://localhost:8080/x", "loopback"),
                            ("http://192.168.1.1/x", "private"), ("http://[::ffff:127.0.0.1]/x", "loopback"),
                            ("http://[fd00::1]/x", "unique local"), ("http://0.0.0.0/x", "this-network")]:
            body = json.dumps({"url": url, "eventTypes": ["*"]}).encode()
            status, _, answer = guarded.admin.call("POST", "/admin/v1/webhooks", guarded.token, body,
                                                  {"Content-Type": "application/json"})
            assert status == 400, (url, answer)
            assert reason in json.loads(answer)["detail"], (url, answer)
        assert guarded.admin.json("GET", "/admin/v1/webhooks", guarded.token) == {"webhooks": []}
    finally:
        guarded.stop()
    # Without PASSKEY_WEBHOOK_ALLOW_HTTP, http:// is refused whatever the address.
    body = json.dumps({"url": "http://127.0.0.1:9/x", "eventTypes": ["*"]}).encode()
    strict_port = free_port()
    strict = Stack("webhook_https", environment={"ADMIN_LISTEN": f"127.0.0.1:{strict_port}",
                                                 "PASSKEY_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8"}).start()
    try:
        strict.admin = Admin(strict_port)
        answer = strict.admin.call("POST", "/admin/v1/webhooks", make_token(strict, "write"), body,
                                   {"Content-Type": "application/json"})
        assert answer[0] == 400 and "https://" in json.loads(answer[2])["detail"], answer
    finally:
        strict.stop()


def test_passkey_admin_manages_webhooks_over_the_api(stack):
    import os
    import subprocess
    from passkey_stack import BIN

    def cli(*arguments):
        environment = {**os.environ, "PASSKEY_ADMIN_URL": stack.admin.base, "PASSKEY_ADMIN_TOKEN": stack.token}
        return subprocess.run([BIN / "passkey-admin", *arguments], env=environment, capture_output=True, text=True,
                              timeout=30)

    receiver = Receiver().start()
    try:
        created = cli("webhook", "create", "--url", receiver.url, "--type", "audit.sign_in.succeeded,audit.account.created",
                      "--description", "cli receiver")
        assert created.returncode == 0, created.stderr
        secret = created.stdout.strip().splitlines()[-1]
        assert secret.startswith("whsec_")
        hook = [w for w in stack.admin.json("GET", "/admin/v1/webhooks", stack.token)["webhooks"]
                if w["url"] == receiver.url][0]
        listed = cli("webhooks", "list")
        assert listed.returncode == 0 and hook["webhookID"] in listed.stdout and "enabled" in listed.stdout
        shown = cli("webhook", "show", hook["webhookID"], "--json")
        assert shown.returncode == 0 and json.loads(shown.stdout)["webhookID"] == hook["webhookID"]
        assert "secret" not in json.loads(shown.stdout)
        account_id, _ = new_account(stack)
        wait_for(lambda: any(e["data"]["accountId"] == account_id for e in receiver.events(secret)), 10,
                 lambda: receiver.requests)
        assert cli("webhook", "enable", hook["webhookID"]).stdout.strip().endswith("was already enabled")
        assert cli("webhook", "delete", hook["webhookID"]).returncode == 0
        assert cli("webhook", "show", hook["webhookID"]).returncode == 3
        assert cli("webhook", "create", "--url", receiver.url).returncode == 2
        refused = cli("webhook", "create", "--url", "http://10.0.0.1/x", "--type", "*")
        assert refused.returncode == 2 and "private" in refused.stderr, refused.stderr
        assert stack.token not in created.stdout + created.stderr + refused.stdout + refused.stderr
    finally:
        receiver.stop()
