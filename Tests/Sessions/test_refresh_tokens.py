"""Refresh tokens against the real processes: concurrent refreshes with one token share one successor; a replaced
token that comes back after the reuse window (2 s here) ends the session, is stored as an audit event and delivered
to a webhook endpoint; revocation by an admin, a disabled account and sign-out stop the next refresh; bad input is
a 400 and a token that is not ours a 401, never a 5xx."""

import json
import threading
import time

import pytest
from standardwebhooks import Webhook

from sessions_support import (
    WEBHOOKS_TO_LOOPBACK, RelyingBackend, WebhookReceiver, b64url, b64url_decode, create_password_account,
    current_session, password_sign_in, problem, refresh, running_stack, wait_for)

# Long enough for 20 concurrent refreshes on a busy machine, short enough to wait out.
REUSE_WINDOW = 2.0


@pytest.fixture(scope="module")
def stack():
    with running_stack("refresh", {"PASSKEY_REFRESH_REUSE_WINDOW": f"{REUSE_WINDOW:.0f}s", **WEBHOOKS_TO_LOOPBACK},
                       admin=True) as running:
        running.backend = RelyingBackend(running)
        yield running


@pytest.fixture(scope="module")
def receiver(stack):
    """A webhook endpoint registered for refresh-token reuse: its signing secret in `receiver.secret`."""
    receiver = WebhookReceiver()
    created = stack.admin.json("POST", "/admin/v1/webhooks", {
        "url": receiver.url, "eventTypes": ["audit.session.refresh_reused"], "description": "sessions suite"},
        expect=201)
    receiver.secret = created["secret"]
    yield receiver
    receiver.stop()


def signed_in(stack):
    address, account_id = create_password_account(stack)
    return account_id, password_sign_in(stack, address)


def test_concurrent_refreshes_share_one_successor_and_a_late_reuse_ends_the_session(stack, receiver):
    account_id, document = signed_in(stack)
    barrier = threading.Barrier(20)
    answers = [None] * 20

    def race(index):
        barrier.wait()
        answers[index] = refresh(stack, document["refreshToken"])

    threads = [threading.Thread(target=race, args=(index,)) for index in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [answer.status for answer in answers] == [200] * 20, [answer.body[:200] for answer in answers]
    successors = {answer.json()["refreshToken"] for answer in answers}
    assert len(successors) == 1, successors
    successor = successors.pop()
    assert successor != document["refreshToken"]
    for answer in answers:
        assert answer.json()["sessionID"] == document["sessionID"]
        _, claims = stack.backend.verify(answer.json()["accessToken"])
        assert claims["sid"] == document["sessionID"]
    last_access_token = answers[-1].json()["accessToken"]
    assert current_session(stack, last_access_token).status == 200

    # The same token after the window: reuse. The session ends, with its successor and its access tokens.
    time.sleep(REUSE_WINDOW + 0.5)
    reused = refresh(stack, document["refreshToken"])
    assert problem(reused) == (401, "unauthenticated", "refresh_token_reused"), reused.body
    assert problem(refresh(stack, successor)) == (401, "unauthenticated", "session_ended")
    assert problem(current_session(stack, last_access_token))[:2] == (401, "unauthenticated")

    events = stack.admin.json(
        "GET", f"/admin/v1/audit-events?accountID={account_id}&type=audit.session.refresh_reused")["events"]
    assert len(events) == 1, events
    assert events[0]["detail"]["session.id"] == document["sessionID"]

    def delivered():
        verified = [Webhook(receiver.secret).verify(body, headers) for headers, body in list(receiver.deliveries)]
        return [event for event in verified if event["data"].get("accountId") == account_id]
    deliveries = wait_for(delivered, 15, lambda: (receiver.deliveries, stack.log_text()[-3000:]))
    assert [event["type"] for event in deliveries] == ["audit.session.refresh_reused"]
    assert deliveries[0]["data"]["eventId"] == events[0]["id"]


def test_a_repeat_within_the_window_gets_the_same_successor(stack):
    _, document = signed_in(stack)
    first = refresh(stack, document["refreshToken"])
    again = refresh(stack, document["refreshToken"])
    assert (first.status, again.status) == (200, 200)
    assert first.json()["refreshToken"] == again.json()["refreshToken"]
    # The successor works, and moves the session on.
    following = refresh(stack, first.json()["refreshToken"])
    assert following.status == 200, following.body
    assert following.json()["refreshToken"] not in (document["refreshToken"], first.json()["refreshToken"])


def test_a_token_two_generations_old_is_reuse_even_within_the_window(stack):
    _, document = signed_in(stack)
    first = refresh(stack, document["refreshToken"]).json()["refreshToken"]
    second = refresh(stack, first)
    assert second.status == 200, second.body
    reused = refresh(stack, document["refreshToken"])
    assert problem(reused) == (401, "unauthenticated", "refresh_token_reused")
    assert problem(refresh(stack, second.json()["refreshToken"]))[2] == "session_ended"


def test_a_forged_token_naming_a_live_session_neither_works_nor_ends_it(stack):
    """Right session and generation, wrong secret: refused as invalid, and the session goes on (else anyone who
    saw a session ID could end it)."""
    _, document = signed_in(stack)
    token = document["refreshToken"]
    raw = bytearray(b64url_decode(token.removeprefix("prt_")))
    raw[-1] ^= 0x01
    forged = "prt_" + b64url(bytes(raw))
    assert len(forged) == len(token) and forged != token
    assert problem(refresh(stack, forged)) == (401, "unauthenticated", "refresh_token_invalid")
    time.sleep(REUSE_WINDOW + 0.2)
    assert problem(refresh(stack, forged)) == (401, "unauthenticated", "refresh_token_invalid")
    assert refresh(stack, token).status == 200
    assert current_session(stack, document["accessToken"]).status == 200


def admin_revokes_every_session(stack, account_id, document):
    assert stack.admin.json("DELETE", f"/admin/v1/accounts/{account_id}/sessions") == {"revoked": 1}


def admin_revokes_the_session(stack, account_id, document):
    path = f"/admin/v1/accounts/{account_id}/sessions/{document['sessionID']}"
    assert stack.admin.json("DELETE", path) == {"revoked": 1}


def admin_disables_the_account(stack, account_id, document):
    disabled = stack.admin.json("POST", f"/admin/v1/accounts/{account_id}/disable")
    assert disabled["disabled"] is True and disabled["sessionsRevoked"] == 1


def the_user_signs_out(stack, account_id, document):
    signed_out = stack.request("DELETE", "/v1/session", token=document["accessToken"])
    assert signed_out.status == 204, signed_out.body


@pytest.mark.parametrize("end", [admin_revokes_every_session, admin_revokes_the_session, admin_disables_the_account,
                                 the_user_signs_out], ids=lambda end: end.__name__)
def test_an_ended_session_cannot_be_refreshed(stack, end):
    account_id, document = signed_in(stack)
    refreshed = refresh(stack, document["refreshToken"])
    assert refreshed.status == 200, refreshed.body
    current = refreshed.json()
    end(stack, account_id, current)
    assert problem(refresh(stack, current["refreshToken"])) == (401, "unauthenticated", "session_ended")
    # Revocation shows at once to GET /v1/session, though the access token has not expired.
    assert problem(current_session(stack, current["accessToken"]))[:2] == (401, "unauthenticated")
    stack.backend.verify(current["accessToken"])


def test_enabling_a_disabled_account_does_not_bring_its_sessions_back(stack):
    account_id, document = signed_in(stack)
    stack.admin.json("POST", f"/admin/v1/accounts/{account_id}/disable")
    stack.admin.json("POST", f"/admin/v1/accounts/{account_id}/enable")
    assert problem(refresh(stack, document["refreshToken"])) == (401, "unauthenticated", "session_ended")


def test_revoking_one_session_leaves_the_others(stack):
    address, account_id = create_password_account(stack)
    kept, revoked = password_sign_in(stack, address), password_sign_in(stack, address)
    path = f"/admin/v1/accounts/{account_id}/sessions/{revoked['sessionID']}"
    assert stack.admin.json("DELETE", path) == {"revoked": 1}
    assert problem(refresh(stack, revoked["refreshToken"]))[2] == "session_ended"
    assert refresh(stack, kept["refreshToken"]).status == 200


SHORT_JWT = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."
# No token at all (without cookie mode): the schema allows it, and it is a refresh that proves nothing.
NO_TOKEN_BODIES = {"no body": None, "empty body": b"", "empty object": b"{}", "null": b'{"refreshToken": null}'}
BAD_BODIES = {
    "truncated JSON": b'{"refreshToken": "prt_',
    "not JSON": b"refreshToken=prt_abc",
    "an array": b'["prt_abc"]',
    "a string": b'"prt_abc"',
    "a number": b'{"refreshToken": 74}',
    "an object": b'{"refreshToken": {"value": "prt_abc"}}',
    "an array of tokens": b'{"refreshToken": ["prt_abc"]}',
    "a boolean": b'{"refreshToken": true}',
    "257 characters": json.dumps({"refreshToken": "prt_" + "A" * 253}).encode(),
    "a short JWT": json.dumps({"refreshToken": SHORT_JWT}).encode(),
}


@pytest.mark.parametrize("body", list(BAD_BODIES.values()), ids=list(BAD_BODIES))
def test_bad_refresh_requests_are_400(stack, body):
    answer = stack.request("POST", "/v1/session/refresh", raw=body)
    assert problem(answer)[:2] == (400, "invalid_request"), answer.body


@pytest.mark.parametrize("body", list(NO_TOKEN_BODIES.values()), ids=list(NO_TOKEN_BODIES))
def test_a_refresh_without_a_token_is_401(stack, body):
    answer = stack.request("POST", "/v1/session/refresh", raw=body)
    assert problem(answer) == (401, "unauthenticated", "refresh_token_invalid"), answer.body
    assert answer.headers.get("www-authenticate") == "Bearer"


def test_a_refresh_body_over_the_limit_is_413(stack):
    answer = stack.request("POST", "/v1/session/refresh", {"refreshToken": "A" * 1_000_000})
    assert problem(answer)[:2] == (413, "payload_too_large"), answer.body


def test_an_access_token_in_the_refresh_field_is_400(stack):
    _, document = signed_in(stack)
    answer = refresh(stack, document["accessToken"])
    assert problem(answer)[:2] == (400, "invalid_request"), answer.body
    assert refresh(stack, document["refreshToken"]).status == 200


@pytest.mark.parametrize("token", ["", "prt_", "prt_abc", "prt_" + "A" * 70, "prt_" + "_" * 70, "x" * 74,
                                   "prt_" + "\u00e9" * 70, "0" * 64, "prt_" + "A" * 252])
def test_strings_that_are_not_our_refresh_tokens_are_401(stack, token):
    answer = refresh(stack, token)
    assert problem(answer) == (401, "unauthenticated", "refresh_token_invalid"), answer.body
