"""Tokens a relying backend must refuse, refused by PyJWT (with `PyJWKClient` on the issuer's `jwks_uri`), by joserfc,
and by the gateway's GET /v1/session (401, with the reason the token was refused for).

Most faults are in the claims of a token whose signature is good: for those the test signs with a key of its own
that it stores sealed in the stack's database as a rotation would, due to sign only in 2100. The services load and
publish it, so a token it signs with correct claims is accepted (the control case), and a refusal shows the claim
check rather than an unknown key. Garbage bearer tokens of every shape are refused with 401, never a 5xx."""

import hashlib
import hmac
import time
import uuid

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from joserfc.errors import JoseError

from sessions_support import (
    OwnSigningKey, RelyingBackend, assemble, b64url, b64url_decode, create_password_account, current_session,
    password_sign_in, problem, running_stack, token_parts)


@pytest.fixture(scope="module")
def stack():
    with running_stack("refusals", {"PASSKEY_ACCESS_TOKEN_LIFETIME": "1m"}) as running:
        running.backend = RelyingBackend(running)
        running.planted = OwnSigningKey()
        running.planted.plant(running)
        yield running


@pytest.fixture
def signed_in(stack):
    """A live session: its session document and the claims of its access token."""
    address, _ = create_password_account(stack)
    document = password_sign_in(stack, address)
    _, claims = stack.backend.verify(document["accessToken"])
    return document, claims


def fresh(claims, **changes):
    """`claims` as a new token of the same session would carry them, with `changes` (None removes a claim)."""
    now = int(time.time())
    result = dict(claims, jti=str(uuid.uuid4()), iat=now, exp=now + 60)
    for name, value in changes.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = value
    return result


def server_public_key_pem(stack, kid):
    jwk = next(key for key in stack.backend.jwks()["keys"] if key["kid"] == kid)
    return jwt.PyJWK(jwk).key.public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)


def alg_none(stack, document, claims):
    header, _, _ = token_parts(document["accessToken"])
    return assemble(dict(header, alg="none"), fresh(claims))


def hs256_with_the_public_key(stack, document, claims):
    """The key-confusion attack: HMAC-SHA256 keyed with the issuer's public key, which everyone can fetch."""
    header, _, _ = token_parts(document["accessToken"])
    unsigned = assemble(dict(header, alg="HS256"), fresh(claims))[:-1]
    pem = server_public_key_pem(stack, header["kid"])
    return unsigned + "." + b64url(hmac.new(pem, unsigned.encode(), hashlib.sha256).digest())


def unknown_kid(stack, document, claims):
    return OwnSigningKey().sign(fresh(claims))


def expired(stack, document, claims):
    # Past the 60 s leeway the services allow for clock skew.
    now = int(time.time())
    return stack.planted.sign(fresh(claims, iat=now - 900, exp=now - 600))


def not_yet_valid(stack, document, claims):
    return stack.planted.sign(fresh(claims, nbf=int(time.time()) + 600))


def wrong_audience(stack, document, claims):
    return stack.planted.sign(fresh(claims, aud="https://other-api.example.com"))


def wrong_issuer(stack, document, claims):
    return stack.planted.sign(fresh(claims, iss="https://issuer.example.net"))


def one_changed_payload_byte(stack, document, claims):
    """The server's own token with one digit of exp raised: a longer life, under the same signature."""
    header, payload, signature = document["accessToken"].split(".")
    raw = bytearray(b64url_decode(payload))
    at = raw.index(b'"exp":') + len(b'"exp":')
    raw[at] = ord("2") if raw[at] != ord("2") else ord("3")
    changed = f"{header}.{b64url(bytes(raw))}.{signature}"
    assert token_parts(changed)[1]["exp"] > claims["exp"]
    return changed


def refresh_token_as_access_token(stack, document, claims):
    return document["refreshToken"]


# Each case: how to make the token, what PyJWT raises, and the reason the gateway gives (None: it gives none).
CASES = {
    "alg_none": (alg_none, jwt.InvalidAlgorithmError, "algorithm_not_allowed"),
    "hs256_with_the_public_key": (hs256_with_the_public_key, jwt.InvalidAlgorithmError, "algorithm_not_allowed"),
    "unknown_kid": (unknown_kid, jwt.PyJWKClientError, "unknown_key"),
    "expired": (expired, jwt.ExpiredSignatureError, "expired"),
    "not_yet_valid": (not_yet_valid, jwt.ImmatureSignatureError, "not_yet_valid"),
    "wrong_audience": (wrong_audience, jwt.InvalidAudienceError, "wrong_audience"),
    "wrong_issuer": (wrong_issuer, jwt.InvalidIssuerError, "wrong_issuer"),
    "one_changed_payload_byte": (one_changed_payload_byte, jwt.InvalidSignatureError, "signature_invalid"),
    "refresh_token_as_access_token": (refresh_token_as_access_token, jwt.DecodeError, None),
}


def test_a_token_signed_by_the_planted_key_with_correct_claims_is_accepted(stack, signed_in):
    """The control for the refusals below: the planted key is trusted, so they are refused for their faults."""
    document, claims = signed_in
    token = stack.planted.sign(fresh(claims))
    header, verified = stack.backend.verify(token)
    assert header["kid"] == stack.planted.kid and verified["sid"] == document["sessionID"]
    accepted = current_session(stack, token)
    assert accepted.status == 200, accepted.body
    assert accepted.json()["sessionID"] == document["sessionID"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_refused_by_pyjwt_joserfc_and_the_gateway(stack, signed_in, case):
    make, pyjwt_error, reason = CASES[case]
    document, claims = signed_in
    token = make(stack, document, claims)
    with pytest.raises(pyjwt_error):
        stack.backend.verify_with_pyjwt(token)
    with pytest.raises((JoseError, ValueError)):
        stack.backend.verify_with_joserfc(token)
    refused = current_session(stack, token)
    assert problem(refused)[:2] == (401, "unauthenticated"), refused.body
    if reason:
        assert problem(refused)[2] == reason, refused.body
    # The session itself is fine: its own token still works.
    assert current_session(stack, document["accessToken"]).status == 200


def test_pyjwt_will_not_use_a_public_key_as_an_hmac_secret(stack, signed_in):
    """Even a backend that wrongly allows HS256 is safe with PyJWT: it refuses a PEM public key as the secret."""
    document, claims = signed_in
    token = hs256_with_the_public_key(stack, document, claims)
    pem = server_public_key_pem(stack, token_parts(document["accessToken"])[0]["kid"])
    with pytest.raises(jwt.InvalidKeyError):
        jwt.decode(token, pem, algorithms=["HS256"], audience=stack.backend.audience)


@pytest.mark.parametrize("header, reason", [
    ({"typ": "JWT"}, "wrong_type"),
    ({"jwk": {"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"}}, "malformed"),
    ({"crit": ["exp"]}, "malformed"),
])
def test_the_gateway_refuses_headers_the_profile_does_not_allow(stack, signed_in, header, reason):
    """RFC 9068 resource servers check typ; an embedded key or a critical extension is refused, not ignored."""
    document, claims = signed_in
    refused = current_session(stack, stack.planted.sign(fresh(claims), header=header))
    assert problem(refused) == (401, "unauthenticated", reason), refused.body


def test_a_well_signed_token_naming_no_live_session_or_another_subject_is_refused(stack, signed_in):
    document, claims = signed_in
    # A well-signed token naming a session that does not exist, or this session under another account.
    for changed in [{"sid": str(uuid.uuid4())}, {"sub": str(uuid.uuid4())}]:
        refused = current_session(stack, stack.planted.sign(fresh(claims, **changed)))
        assert problem(refused)[:2] == (401, "unauthenticated"), (changed, refused.body)


GARBAGE = [
    "a.b.c", "a.b.c.d", "...", "..", ".", "!!!.@@@.###", "eyJ.eyJ.eyJ", "e30.e30.", "e30.e30.AAAA",
    "%%%%.%%%%.%%%%", "x" * 4097, "a." * 2000 + "a", "eyJhbGciOiJFUzI1NiJ9." + "A" * 4000 + ".sig", "null", "{}",
    "prt_" + "A" * 70, "0" * 64, "Bearer Bearer", "\u00e9t\u00e9.\u00e9t\u00e9.\u00e9t\u00e9",
]


@pytest.mark.parametrize("token", GARBAGE, ids=lambda token: f"{token[:12]}..{len(token)}")
def test_garbage_bearer_tokens_are_401(stack, token):
    refused = stack.request("GET", "/v1/session", headers={"Authorization": f"Bearer {token}".encode("latin-1")})
    assert problem(refused)[:2] == (401, "unauthenticated"), refused.body


def test_a_bearer_token_larger_than_the_request_head_is_431(stack):
    refused = stack.request("GET", "/v1/session", token="x" * 20000)
    assert problem(refused)[:2] == (431, "header_fields_too_large")


@pytest.mark.parametrize("authorization", ["Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "bearer", "Token abc", ""])
def test_malformed_authorization_headers_are_401(stack, authorization):
    refused = stack.request("GET", "/v1/session", headers={"Authorization": authorization})
    assert problem(refused)[:2] == (401, "unauthenticated"), refused.body
