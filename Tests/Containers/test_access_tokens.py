"""Access tokens in the container stack: the key-encryption key (KEK) that seals the signing keys is made once per
stack in its state directory, private to the user running it, and mounted read-only at /etc/passkey/token-kek into
the session-service and verification-service containers only (as the Kubernetes Deployments mount the Secret
passkey-token-kek); a sign-in gets a JWT that verifies against the gateway's JWKS, and so does its refresh; no
replica fails to open the stored keys, as one with another KEK would.

Runs first on the stack and leaves the replicas as they are."""

from __future__ import annotations

import json
import re
import secrets
import stat
import subprocess
import urllib.error
import urllib.request

import jwt

from conftest import STACK_LABEL

TOKEN_KEK_MOUNT = "/etc/passkey/token-kek"
ISSUERS = {"session-service", "verification-service"}
PASSWORD = "correct horse battery staple"


def call(stack, method: str, path: str, body: dict | None = None, token: str | None = None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        f"{stack.gateway_url}{path}", method=method, headers=headers,
        data=json.dumps(body).encode() if body is not None else None)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def running_containers() -> list[dict]:
    """Every running container of the stack, as podman inspect describes it."""
    names = subprocess.run(
        ["podman", "--runtime", "runc", "ps", "--filter", f"label={STACK_LABEL}", "--format", "{{.Names}}"],
        capture_output=True, text=True, timeout=60, check=True).stdout.split()
    assert names, "the stack runs no container"
    result = subprocess.run(["podman", "--runtime", "runc", "inspect", *names],
                            capture_output=True, text=True, timeout=60, check=True)
    return json.loads(result.stdout)


def verify(stack, token: str) -> dict:
    """The claims of an access token, checked as an app's backend would: signature by a key of the gateway's JWKS,
    typ at+jwt, issuer and audience (both the stack's origin by default), expiry."""
    status, document = call(stack, "GET", "/.well-known/jwks.json")
    assert status == 200, document
    header = jwt.get_unverified_header(token)
    assert header.get("typ") == "at+jwt", header
    keys = {key["kid"]: key for key in document["keys"]}
    assert header.get("kid") in keys, (header, sorted(keys))
    return jwt.decode(token, jwt.PyJWK(keys[header["kid"]]).key, algorithms=["ES256", "EdDSA"],
                      audience=stack.origin, issuer=stack.origin)


def test_the_kek_is_made_once_and_kept_private(stack):
    directory = stack.token_kek_dir()
    key = directory / "kek" / "key"
    assert re.fullmatch(r"[0-9a-f]{64}\n?", key.read_text()), "the KEK is not 32 bytes as 64 hex digits"
    # No other host user gets into the directory; 65532, which owns nothing here, reads the key through the mount.
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((directory / "kek").stat().st_mode) == 0o755
    assert stat.S_IMODE(key.stat().st_mode) == 0o644
    # Asked again (as every replica start does), it stays the same.
    before = key.read_text()
    stack.lib("stack_token_kek")
    assert key.read_text() == before


def test_only_session_and_verification_service_mount_the_kek(stack):
    source = str(stack.token_kek_dir() / "kek")
    seen = set()
    for container in running_containers():
        service = (container["Config"].get("Labels") or {}).get("passkey.service")
        name = container["Name"]
        mounts = [mount for mount in container.get("Mounts") or []
                  if mount.get("Destination") == TOKEN_KEK_MOUNT or mount.get("Source") == source]
        if service in ISSUERS:
            seen.add(service)
            assert len(mounts) == 1, (name, mounts)
            assert (mounts[0]["Source"], mounts[0]["Destination"]) == (source, TOKEN_KEK_MOUNT), (name, mounts)
            assert mounts[0].get("RW") is False, (name, mounts)
        else:
            assert mounts == [], (name, service, mounts)
    assert seen == ISSUERS


def test_a_sign_in_gets_an_access_token_that_verifies_against_the_jwks(stack):
    email = f"kek-{secrets.token_hex(4)}@example.com"
    status, created = call(stack, "POST", "/v1/accounts/password",
                           {"email": email, "password": PASSWORD, "displayName": "Token"})
    assert status == 201, created
    status, session = call(stack, "POST", "/v1/sessions/password", {"email": email, "password": PASSWORD})
    assert status == 200, session
    claims = verify(stack, session["accessToken"])
    assert (claims["sub"], claims["sid"]) == (created["accountID"], session["sessionID"]), claims
    status, online = call(stack, "GET", "/v1/session", token=session["accessToken"])
    assert status == 200 and online["accountID"] == created["accountID"], online
    # The refresh token gets the next access token, signed the same way.
    status, refreshed = call(stack, "POST", "/v1/session/refresh", {"refreshToken": session["refreshToken"]})
    assert status == 200, refreshed
    assert refreshed["accessToken"] != session["accessToken"]
    again = verify(stack, refreshed["accessToken"])
    assert (again["sub"], again["sid"]) == (claims["sub"], claims["sid"]), again


def test_every_replica_opens_the_stored_signing_keys(stack):
    """One KEK for every replica: a replica with another could not open the key the first one made, and would log
    signing_keys.load_failed."""
    for container in running_containers():
        if (container["Config"].get("Labels") or {}).get("passkey.service") in ISSUERS:
            log = stack.logs(container["Name"])
            assert "signing_keys.load_failed" not in log, log[-3000:]
