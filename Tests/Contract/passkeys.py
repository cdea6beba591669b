"""Just enough of an authenticator to register passkeys through the gateway: `none` attestation, so nothing is signed,
and an ES256 public key (the P-256 generator point, a valid key whose private half is 1: these passkeys are never
used to sign in). The contract run then finds real passkeys to list, rename and remove."""

import hashlib
import json
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "Support" / "python"))

from webauthn_encoding import b64url, cbor  # noqa: E402

# The P-256 base point (SEC 2), as affine coordinates.
P256_GX = bytes.fromhex("6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296")
P256_GY = bytes.fromhex("4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")


def registration_response(start: dict, origin: str) -> dict:
    """The flat finish body for the creation options of a registration start."""
    credential_id = os.urandom(16)
    client_data = json.dumps(
        {"type": "webauthn.create", "challenge": start["challenge"], "origin": origin, "crossOrigin": False},
        separators=(",", ":")).encode()
    public_key = cbor({1: 2, 3: -7, -1: 1, -2: P256_GX, -3: P256_GY})
    flags = 0x01 | 0x04 | 0x40  # user present, user verified, attested credential data
    auth_data = (
        hashlib.sha256(start["relyingPartyID"].encode()).digest() + bytes([flags]) + (0).to_bytes(4, "big")
        + bytes(16) + len(credential_id).to_bytes(2, "big") + credential_id + public_key
    )
    attestation = cbor({"fmt": "none", "attStmt": {}, "authData": auth_data})
    return {
        "credentialID": b64url(credential_id),
        "clientDataJSON": b64url(client_data),
        "attestationObject": b64url(attestation),
        "transports": ["internal"],
    }
