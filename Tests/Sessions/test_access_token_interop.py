"""Access tokens from every way to sign in, verified as another company's backend would: PyJWT with `PyJWKClient` on
the discovery document's `jwks_uri`, and joserfc against the JWKS the gateway serves; every claim of the RFC 9068
profile checked against the session document. Once with ES256 keys and the default audience, once with EdDSA keys
and an audience of its own, each with a lifetime other than the default."""

import datetime
import time
import uuid

import pytest

from sessions_support import (
    RelyingBackend, create_password_account, current_session, passkey_sign_in, passkey_sign_up, password_sign_in,
    recovery_sign_in, refresh, running_stack)

CONFIGURATIONS = {
    "ES256": {"PASSKEY_ACCESS_TOKEN_LIFETIME": "2m"},
    "EdDSA": {"PASSKEY_ACCESS_TOKEN_LIFETIME": "45s", "PASSKEY_TOKEN_ALGORITHM": "EdDSA",
              "PASSKEY_TOKEN_AUDIENCE": "https://api.example.com"},
}
LIFETIMES = {"ES256": 120, "EdDSA": 45}
CLAIMS = {"iss", "sub", "aud", "client_id", "exp", "iat", "jti", "sid", "auth_time", "amr"}


@pytest.fixture(scope="module", params=sorted(CONFIGURATIONS))
def issuer(request):
    algorithm = request.param
    with running_stack(f"interop_{algorithm.lower()}", CONFIGURATIONS[algorithm]) as stack:
        stack.algorithm = algorithm
        stack.lifetime = LIFETIMES[algorithm]
        stack.backend = RelyingBackend(stack, audience=CONFIGURATIONS[algorithm].get("PASSKEY_TOKEN_AUDIENCE"))
        yield stack


def rfc3339(text):
    return int(datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
               .timestamp())


def check_session_document(stack, document, amr, account_id=None, signed_in_at=None):
    """Verifies the document's access token with both libraries and checks every claim against the document, the
    configuration and the clock; the gateway must accept the token too. Returns the claims."""
    backend = stack.backend
    header, claims = backend.verify(document["accessToken"])
    assert set(header) == {"alg", "typ", "kid"} and header["alg"] == stack.algorithm, header
    published = {key["kid"]: key for key in backend.jwks()["keys"]}
    assert published[header["kid"]]["alg"] == stack.algorithm
    assert published[header["kid"]]["kty"] == ("EC" if stack.algorithm == "ES256" else "OKP")

    assert set(claims) == CLAIMS, claims
    assert claims["iss"] == backend.issuer == stack.origin
    assert claims["aud"] == backend.audience
    assert claims["client_id"] == "localhost"
    assert claims["sub"] == document["accountID"]
    if account_id:
        assert claims["sub"] == account_id
    assert claims["sid"] == document["sessionID"]
    assert claims["amr"] == amr
    assert uuid.UUID(claims["jti"]).version == 4
    now = time.time()
    assert now - 10 <= claims["iat"] <= now + 1
    assert claims["exp"] - claims["iat"] == stack.lifetime
    if signed_in_at is None:
        assert claims["iat"] - 10 <= claims["auth_time"] <= claims["iat"]
    else:
        assert claims["auth_time"] == signed_in_at

    assert document["tokenType"] == "Bearer"
    assert rfc3339(document["expiresAt"]) == claims["exp"]
    assert stack.lifetime - 5 <= document["expiresIn"] <= stack.lifetime
    assert document["refreshToken"].startswith("prt_") and len(document["refreshToken"]) == 74
    assert rfc3339(document["refreshTokenExpiresAt"]) > claims["exp"]
    assert rfc3339(document["sessionExpiresAt"]) >= rfc3339(document["refreshTokenExpiresAt"])

    current = current_session(stack, document["accessToken"])
    assert current.status == 200, current.body
    assert (current.json()["accountID"], current.json()["sessionID"]) == (claims["sub"], claims["sid"])
    return claims


def test_password_sign_in(issuer):
    address, account_id = create_password_account(issuer)
    check_session_document(issuer, password_sign_in(issuer, address), ["pwd"], account_id)


def test_passkey_sign_in(issuer, authenticator):
    signed_up = passkey_sign_up(issuer, authenticator)
    check_session_document(issuer, passkey_sign_in(issuer, authenticator), ["pop", "user"], signed_up["accountID"])


def test_sign_up_with_a_passkey_signs_in(issuer, authenticator):
    signed_up = passkey_sign_up(issuer, authenticator, display_name="Grace")
    assert signed_up["displayName"] == "Grace"
    check_session_document(issuer, signed_up, ["pop", "user"])


def test_recovery_with_a_recovery_code(issuer, authenticator):
    address, account_id = create_password_account(issuer)
    before = password_sign_in(issuer, address)
    recovered = recovery_sign_in(issuer, address, before["accessToken"], authenticator)
    claims = check_session_document(issuer, recovered, ["otp", "pop"], account_id)
    assert claims["sid"] != before["sessionID"]
    # Recovery ended the account's other sessions.
    assert current_session(issuer, before["accessToken"]).status == 401


def test_a_refreshed_token_keeps_the_session_its_sign_in_time_and_methods(issuer, authenticator):
    signed_up = passkey_sign_up(issuer, authenticator)
    first = check_session_document(issuer, signed_up, ["pop", "user"])
    time.sleep(1.1)
    refreshed = refresh(issuer, signed_up["refreshToken"])
    assert refreshed.status == 200, refreshed.body
    second = check_session_document(issuer, refreshed.json(), ["pop", "user"], signed_in_at=first["auth_time"])
    assert second["sid"] == first["sid"] and second["jti"] != first["jti"] and second["iat"] > first["iat"]
    assert refreshed.json()["refreshToken"] != signed_up["refreshToken"]


def test_the_discovery_document_names_the_keys_and_the_issuer(issuer):
    backend = issuer.backend
    document = backend.discovery
    assert document["issuer"] == issuer.origin
    assert document["jwks_uri"] == issuer.origin + "/.well-known/jwks.json"
    assert issuer.algorithm in document["access_token_signing_alg_values_supported"]
    # What jwks_uri serves (fetched by PyJWT's client, by that URL) is the gateway's JWKS, cacheable.
    fetched = backend.jwks_client.fetch_data()
    served = issuer.request("GET", "/.well-known/jwks.json")
    assert fetched == served.json() and fetched["keys"]
    assert served.headers["cache-control"] == "public, max-age=300"
    assert served.headers["content-type"].startswith("application/json")
    discovery = issuer.request("GET", "/.well-known/openid-configuration")
    assert discovery.headers["content-type"].startswith("application/json")
    for key in fetched["keys"]:
        assert key["use"] == "sig" and key["alg"] == issuer.algorithm and "d" not in key
    # The tokens' iss is the document's issuer, and their kid is among the keys jwks_uri serves.
    address, _ = create_password_account(issuer)
    token = password_sign_in(issuer, address)["accessToken"]
    header, claims = backend.verify_with_pyjwt(token)
    assert claims["iss"] == document["issuer"]
    assert header["kid"] in {key["kid"] for key in fetched["keys"]}
