"""What the schemathesis run leaves to others, over the wire against the running gateway: the document is the resource
file as it is, every path answers every method it lacks with 405 and its exact `Allow`, a flood gets 429 with
`Retry-After`, and a malformed field is refused for its shape before any challenge is looked up."""

import uuid

import pytest

from stack import ROOT

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE")
SAMPLES = {"{credentialID}": "AQID", "{sessionID}": "3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3c"}


def test_the_served_document_is_the_resource_file(stack):
    served = stack.request("GET", "/openapi.json")
    assert served.status == 200
    assert served.headers["Content-Type"] == "application/json"
    assert served.body == (ROOT / "Services" / "Gateway" / "Core" / "openapi.json").read_bytes()
    assert served.json()["openapi"] == "3.1.0"


def test_every_method_a_path_lacks_is_405_with_exactly_its_methods(stack):
    paths = stack.request("GET", "/openapi.json").json()["paths"]
    checked = 0
    for pattern, item in paths.items():
        path = pattern
        for name, value in SAMPLES.items():
            path = path.replace(name, value)
        expected = {method.upper() for method in item if method.upper() in METHODS}
        if "GET" in expected:
            expected.add("HEAD")
        for method in METHODS:
            if method in expected:
                continue
            response = stack.request(method, path)
            assert response.status == 405, f"{method} {path}"
            allowed = [name.strip() for name in response.headers["Allow"].split(",")]
            assert sorted(allowed) == sorted(expected), f"{method} {path}: {allowed}"
            if method != "HEAD":
                assert response.json()["code"] == "method_not_allowed"
            checked += 1
    assert checked >= 140
    # The literal path beside /v1/passkeys/{credentialID} lends it none of its methods.
    assert stack.request("OPTIONS", "/v1/passkeys/authentications").headers["Allow"] == "POST"
    assert stack.request("PATCH", "/v1/passkeys/authentications").headers["Allow"] == "POST"


def test_a_flood_of_sign_ins_is_429_with_retry_after(stack):
    address = "2001:db8:18:429::1"
    statuses = []
    for attempt in range(40):
        response = stack.request(
            "POST", "/v1/sessions/password", {"email": f"nobody{attempt}@example.com", "password": "wrong"},
            client_address=address)
        statuses.append(response.status)
        if response.status == 429:
            break
    assert statuses[-1] == 429, statuses
    assert set(statuses[:-1]) == {401}
    retry_after = response.headers["Retry-After"]
    assert retry_after.isdigit() and int(retry_after) >= 1
    assert response.headers["Content-Type"] == "application/problem+json"
    problem = response.json()
    assert (problem["status"], problem["code"]) == (429, "rate_limited")
    # Another client address is not limited by this one's flood.
    other = stack.request(
        "POST", "/v1/sessions/password", {"email": "nobody@example.com", "password": "wrong"},
        client_address="2001:db8:18:430::1")
    assert other.status == 401


@pytest.mark.parametrize("route", ["/v1/passkeys/authentications/finish", "/v1/passkeys/account-registrations/finish"])
def test_a_malformed_field_is_refused_before_the_challenge_is_looked_up(stack, route):
    key = "challengeID" if "authentications" in route else "registrationID"
    flat = {
        "credentialID": "AQID", "clientDataJSON": "e30", "authenticatorData": "AQID", "signature": "AQID",
        "userHandle": "AQID", "attestationObject": "oA",
    }
    unknown = stack.request("POST", route, dict(flat, **{key: str(uuid.uuid4())}))
    assert (unknown.status, unknown.json()["code"]) == (410, "challenge_unavailable")
    for bad in ("not-a-uuid", str(uuid.uuid4()) + "0", ""):
        response = stack.request("POST", route, dict(flat, **{key: bad}))
        assert (response.status, response.json()["code"]) == (400, "invalid_request"), bad
        assert key in response.json()["detail"]
    too_long = stack.request("POST", route, dict(flat, credentialID="A" * 1366, **{key: str(uuid.uuid4())}))
    assert (too_long.status, too_long.json()["code"]) == (400, "invalid_request")
