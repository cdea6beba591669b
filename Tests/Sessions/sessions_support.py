"""What the session suite's tests share: stacks with the knobs they need, the ways to sign in, and a relying
backend's view of the tokens: the discovery document, the JWKS, and verification by two independent JOSE libraries
(PyJWT, with its JWKS client, and joserfc)."""

import base64
import contextlib
import hashlib
import http.server
import json
import os
import pathlib
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
import warnings

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from joserfc import jwt as jose_jwt
from joserfc.errors import SecurityWarning
from joserfc.jwk import KeySet

TESTS = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "Support" / "python"))

# Authenticator and free_port are for the tests too.
from passkey_stack import BIN, Stack, free_port  # noqa: E402
import secret_key_ring  # noqa: E402
from openssl_authenticator import Authenticator  # noqa: E402,F401

PASSWORD = "sessions suite password"
ALGORITHMS = ["ES256", "EdDSA"]
# The suite signs in and refreshes far faster than a person, from one address.
RATE_LIMITS_OFF = {
    "PASSKEY_TRUSTED_PROXIES": "127.0.0.1",
    "PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL": "0", "PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS": "0",
    "PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_START_PER_ADDRESS": "0",
    "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_RECOVERY_PER_ADDRESS": "0",
    "PASSKEY_RATE_LIMIT_RECOVERY_PER_EMAIL": "0", "PASSKEY_RATE_LIMIT_ADMIN_PER_ADDRESS": "0",
}
# Webhooks to a receiver on loopback over plain HTTP, retried quickly.
WEBHOOKS_TO_LOOPBACK = {
    "PASSKEY_WEBHOOK_ALLOW_HTTP": "true", "PASSKEY_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
    "PASSKEY_WEBHOOK_TIMEOUT": "2s", "PASSKEY_WEBHOOK_MAX_RETRY_DELAY": "1s",
}


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# ---------------------------------------------------------------------------------------------------------------
# Stacks


class Admin:
    """Calls to the gateway's admin listener with a token made by `passkey-admin token create`."""

    def __init__(self, stack, port):
        self.base = f"http://127.0.0.1:{port}"
        result = subprocess.run(
            [BIN / "passkey-admin", "token", "create", "--name", "sessions suite", "--scopes", "read,write"],
            env={**os.environ, "DATABASE_URL": stack.url, "USER": "sessions-suite"}, capture_output=True, text=True,
            check=True)
        self.token = result.stdout.strip().splitlines()[-1]

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                status, answer = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, answer = error.code, error.read()
        return status, (json.loads(answer) if answer else None)

    def json(self, method, path, body=None, expect=200):
        status, answer = self.call(method, path, body)
        assert status == expect, (method, path, status, answer)
        return answer


@contextlib.contextmanager
def running_stack(prefix, environment=None, admin=False):
    """A stack of its own (a fresh database, the four processes) with the rate limits off and `environment` added;
    with `admin`, an admin listener and `stack.admin`. On the way out, every process must still be running."""
    extra = dict(RATE_LIMITS_OFF)
    admin_port = free_port() if admin else None
    if admin:
        extra["ADMIN_LISTEN"] = f"127.0.0.1:{admin_port}"
    extra.update(environment or {})
    stack = Stack(prefix, environment=extra).start()
    try:
        stack.admin = Admin(stack, admin_port) if admin else None
        yield stack
        exited = stack.exited()
        assert not exited, f"processes exited: {exited}\n{stack.log_text()}"
    finally:
        stack.stop()


def problem(response):
    """(status, code, reason) of a problem+json answer."""
    assert response.headers.get("content-type", "").startswith("application/problem+json"), (
        response.status, response.headers.get("content-type"), response.body[:300])
    document = response.json()
    assert document["status"] == response.status
    return response.status, document["code"], document.get("reason")


def wait_for(condition, timeout, message):
    """Polls `condition` every 50 ms until it holds; fails with `message()` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, message()
        time.sleep(0.05)


# ---------------------------------------------------------------------------------------------------------------
# Signing in


def new_email(tag="session"):
    return f"{tag}-{uuid.uuid4().hex[:12]}@example.com"


def create_password_account(stack, display_name="Ada"):
    address = new_email("pwd")
    created = stack.request("POST", "/v1/accounts/password",
                            {"email": address, "password": PASSWORD, "displayName": display_name})
    assert created.status == 201, created.body
    return address, created.json()["accountID"]


def password_sign_in(stack, address, headers=None):
    """The session document of a password sign-in."""
    signed_in = stack.request("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD},
                              headers=headers)
    assert signed_in.status == 200, signed_in.body
    return signed_in.json()


def passkey_sign_up(stack, authenticator, display_name="Grace"):
    """A new account made with a passkey in one ceremony: the 201 session document."""
    start = stack.request("POST", "/v1/passkeys/account-registrations",
                          {"email": new_email("passkey"), "displayName": display_name})
    assert start.status == 200, start.body
    body = dict(authenticator.registration(start.json(), stack.origin), registrationID=start.json()["registrationID"])
    finished = stack.request("POST", "/v1/passkeys/account-registrations/finish", body)
    assert finished.status == 201, finished.body
    return finished.json()


def passkey_sign_in(stack, authenticator):
    """The session document of a passkey sign-in (discoverable: no email)."""
    start = stack.request("POST", "/v1/passkeys/authentications", {})
    assert start.status == 200, start.body
    finished = stack.request("POST", "/v1/passkeys/authentications/finish",
                             authenticator.assertion(start.json(), stack.origin))
    assert finished.status == 200, finished.body
    return finished.json()


def recovery_sign_in(stack, address, token, authenticator):
    """Recovery with one of the account's recovery codes (which the session `token` makes), then a new passkey: the
    session document that finishes recovery."""
    codes = stack.request("POST", "/v1/account/recovery-codes", {}, token=token)
    assert codes.status == 200, codes.body
    recovered = stack.request("POST", "/v1/recovery/finish",
                              {"email": address, "recoveryCode": codes.json()["codes"][0]})
    assert recovered.status == 200, recovered.body
    # The recovery session is restricted: an opaque token, no refresh token.
    restricted = recovered.json()["accessToken"]
    assert "." not in restricted and "refreshToken" not in recovered.json(), recovered.json()
    start = stack.request("POST", "/v1/passkeys/registrations", {}, token=restricted)
    assert start.status == 200, start.body
    body = dict(authenticator.registration(start.json(), stack.origin), challengeID=start.json()["challengeID"])
    finished = stack.request("POST", "/v1/recovery/passkeys/finish", body, token=restricted)
    assert finished.status == 200, finished.body
    return finished.json()


def refresh(stack, refresh_token):
    return stack.request("POST", "/v1/session/refresh", {"refreshToken": refresh_token})


def current_session(stack, access_token):
    return stack.request("GET", "/v1/session", token=access_token)


# ---------------------------------------------------------------------------------------------------------------
# A relying backend's view


class RelyingBackend:
    """Another company's backend: it knows only the issuer's discovery document and verifies access tokens against
    the published keys, with PyJWT's `PyJWKClient` on `jwks_uri` and with joserfc on the JWKS the gateway serves."""

    def __init__(self, stack, audience=None):
        self.stack = stack
        discovery = stack.request("GET", "/.well-known/openid-configuration")
        assert discovery.status == 200, discovery.body
        self.discovery = discovery.json()
        self.issuer = self.discovery["issuer"]
        self.audience = audience or self.issuer
        self.jwks_uri = self.discovery["jwks_uri"]
        self.jwks_client = jwt.PyJWKClient(self.jwks_uri, cache_jwk_set=False)

    def jwks(self):
        """The JWKS the gateway serves now."""
        answer = self.stack.request("GET", "/.well-known/jwks.json")
        assert answer.status == 200, answer.body
        return answer.json()

    def verify_with_pyjwt(self, token, jwks=None):
        """Header and claims, as PyJWT verifies them; `jwks` instead of fetching `jwks_uri`. Raises PyJWT's errors."""
        if jwks is None:
            key = self.jwks_client.get_signing_key_from_jwt(token)
        else:
            kid = jwt.get_unverified_header(token).get("kid")
            key = jwt.PyJWKSet.from_dict(jwks)[kid]
        claims = jwt.decode(
            token, key, algorithms=ALGORITHMS, audience=self.audience, issuer=self.issuer,
            options={"require": ["exp", "iat", "iss", "aud", "sub", "jti"]})
        return jwt.get_unverified_header(token), claims

    def verify_with_joserfc(self, token, jwks=None):
        """Header and claims, as joserfc verifies them against the gateway's JWKS. Raises joserfc's errors."""
        key_set = KeySet.import_key_set(jwks if jwks is not None else self.jwks())
        with warnings.catch_warnings():
            # joserfc warns that RFC 9864 deprecates the name "EdDSA" for "Ed25519"; the tokens and JWKS use the
            # RFC 8037 name, which is what deployed verifiers know.
            warnings.filterwarnings("ignore", "EdDSA is deprecated", SecurityWarning)
            decoded = jose_jwt.decode(token, key_set, algorithms=ALGORITHMS)
        jose_jwt.JWTClaimsRegistry(
            iss={"essential": True, "value": self.issuer}, aud={"essential": True, "value": self.audience},
            sub={"essential": True}, exp={"essential": True}, iat={"essential": True}, jti={"essential": True},
        ).validate(decoded.claims)
        return decoded.header, decoded.claims

    def verify(self, token, jwks=None):
        """The claims, once both libraries agree on header and claims; the header must say `typ: at+jwt`."""
        header, claims = self.verify_with_pyjwt(token, jwks)
        jose_header, jose_claims = self.verify_with_joserfc(token, jwks)
        assert (header, claims) == (dict(jose_header), dict(jose_claims))
        assert header["typ"] == "at+jwt", header
        return header, claims


def token_parts(token):
    header, payload, signature = token.split(".")
    return json.loads(b64url_decode(header)), json.loads(b64url_decode(payload)), signature


def assemble(header, payload, signature=""):
    """A compact JWS from a header and payload (dicts, or raw bytes) and a base64url signature."""
    encode = (lambda part: b64url(part if isinstance(part, bytes) else
                                  json.dumps(part, separators=(",", ":")).encode()))
    return f"{encode(header)}.{encode(payload)}.{signature}"


def thumbprint(x, y):
    """The RFC 7638 thumbprint of a P-256 key, as the services name their keys."""
    canonical = json.dumps({"crv": "P-256", "kty": "EC", "x": x, "y": y}, separators=(",", ":"), sort_keys=True)
    return b64url(hashlib.sha256(canonical.encode()).digest())


class OwnSigningKey:
    """A P-256 key of the test's own, named by its thumbprint as the services name theirs."""

    def __init__(self):
        self.private = ec.generate_private_key(ec.SECP256R1())
        numbers = self.private.public_key().public_numbers()
        self.x, self.y = b64url(numbers.x.to_bytes(32, "big")), b64url(numbers.y.to_bytes(32, "big"))
        self.kid = thumbprint(self.x, self.y)
        self.jwk = {"kty": "EC", "crv": "P-256", "x": self.x, "y": self.y, "kid": self.kid, "alg": "ES256",
                    "use": "sig"}

    def sign(self, claims, header=None):
        return jwt.encode(claims, self.private, algorithm="ES256",
                          headers={"typ": "at+jwt", "kid": self.kid, **(header or {})})

    def public_pem(self):
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def plant(self, stack):
        """Stores this key in the stack's database as a rotation would (its PKCS #8 private key sealed with
        AES-256-GCM under the signing-key purpose key of the stack's key ring, bound to its key ID:
        secret_key_ring.seal_box), published from now but due to sign
        only in 2100: the services load and publish it, so tokens it signs verify and fail only for what the test
        put wrong in them. Returns once the gateway's JWKS carries it."""
        private = self.private.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption())
        current = secret_key_ring.ring_keys(stack.key_encryption_key)[0]
        sealed = secret_key_ring.seal_box(current, "signing-key", private, self.kid.encode())
        public = json.dumps(self.jwk, separators=(",", ":"))
        stack.sql("INSERT INTO session_signing_keys (key_id, algorithm, public_jwk, private_key_sealed, created_at, "
                  f"activates_at) VALUES ('{self.kid}', 'ES256', '{public}'::jsonb, '\\x{sealed.hex()}', now(), "
                  "'2100-01-01T00:00:00Z')")
        wait_for(lambda: self.kid in published_key_ids(stack), 15,
                 lambda: f"the planted key never reached the JWKS\n{stack.log_text()}")


def published_key_ids(stack):
    answer = stack.request("GET", "/.well-known/jwks.json")
    assert answer.status == 200, answer.body
    return [key["kid"] for key in answer.json()["keys"]]


# ---------------------------------------------------------------------------------------------------------------
# Webhooks


class WebhookReceiver:
    """An HTTP endpoint on loopback that records every delivery (headers, body) and answers 204."""

    def __init__(self):
        self.port = free_port()
        self.deliveries = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with receiver.lock:
                    receiver.deliveries.append((dict(self.headers), body))
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/hooks"

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
