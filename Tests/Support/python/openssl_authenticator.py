"""The Python suites' software authenticator: registrations with `none` attestation and signed assertions, as the flat
finish bodies the gateway takes. `Authenticator` is a passkey that really signs (a P-256 key made by the openssl
command); `registration_response` registers one that never signs in (its public key is the P-256 generator point, a
valid key whose private half is 1), for suites that only need passkeys to exist."""

import hashlib
import json
import os
import pathlib
import re
import subprocess
import uuid

from webauthn_encoding import b64url, cbor


# The P-256 base point (SEC 2), as affine coordinates.
P256_GX = bytes.fromhex("6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296")
P256_GY = bytes.fromhex("4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")


def registration_body(start, origin, credential_id, x, y, user_present=True):
    """The flat finish body of a registration start (`none` attestation) for the P-256 public key (x, y)."""
    client_data = json.dumps({"type": "webauthn.create", "challenge": start["challenge"], "origin": origin,
                              "crossOrigin": False}, separators=(",", ":")).encode()
    flags = (0x01 if user_present else 0) | 0x04 | 0x40
    auth_data = (hashlib.sha256(start["relyingPartyID"].encode()).digest() + bytes([flags]) + bytes(4) + bytes(16)
                 + len(credential_id).to_bytes(2, "big") + credential_id
                 + cbor({1: 2, 3: -7, -1: 1, -2: x, -3: y}))
    return {"credentialID": b64url(credential_id), "clientDataJSON": b64url(client_data),
            "attestationObject": b64url(cbor({"fmt": "none", "attStmt": {}, "authData": auth_data})),
            "transports": ["internal"]}


def registration_response(start, origin):
    """A registration of a new passkey that is never used to sign in."""
    return registration_body(start, origin, os.urandom(16), P256_GX, P256_GY)


class Authenticator:
    """One passkey: a P-256 key made by `openssl ecparam`, its signatures made by `openssl dgst -sign`."""

    def __init__(self, directory):
        self.key = pathlib.Path(directory) / f"passkey-{uuid.uuid4().hex}.pem"
        subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(self.key)],
                       check=True, capture_output=True)
        text = subprocess.run(["openssl", "ec", "-in", str(self.key), "-text", "-noout"], check=True,
                              capture_output=True, text=True).stdout
        public = bytes.fromhex(re.sub(r"[^0-9a-f]", "", text.split("pub:")[1].split("ASN1")[0]))
        assert public[0] == 4 and len(public) == 65
        self.x, self.y = public[1:33], public[33:]
        self.credential_id = os.urandom(16)
        self.user_handle = None

    def registration(self, start, origin, user_present=True):
        """The flat finish body of a registration start (`none` attestation)."""
        self.user_handle = start["publicKey"]["user"]["id"]
        return registration_body(start, origin, self.credential_id, self.x, self.y, user_present)

    def assertion(self, start, origin):
        """The flat finish body of a sign-in start, signed."""
        client_data = json.dumps({"type": "webauthn.get", "challenge": start["challenge"], "origin": origin,
                                  "crossOrigin": False}, separators=(",", ":")).encode()
        auth_data = hashlib.sha256(start["relyingPartyID"].encode()).digest() + bytes([0x05]) + bytes(4)
        signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", str(self.key)],
                                   input=auth_data + hashlib.sha256(client_data).digest(), check=True,
                                   capture_output=True).stdout
        return {"challengeID": start["challengeID"], "credentialID": b64url(self.credential_id),
                "clientDataJSON": b64url(client_data), "authenticatorData": b64url(auth_data),
                "signature": b64url(signature), "userHandle": self.user_handle}
