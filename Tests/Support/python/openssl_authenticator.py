"""A passkey for the Python suites that really signs: a P-256 key made by the openssl command, registrations with
`none` attestation and signed assertions, as the flat finish bodies the gateway takes."""

import hashlib
import json
import os
import pathlib
import re
import subprocess
import uuid

from webauthn_encoding import b64url, cbor


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
        options = start["publicKey"]
        self.user_handle = options["user"]["id"]
        client_data = json.dumps({"type": "webauthn.create", "challenge": start["challenge"], "origin": origin,
                                  "crossOrigin": False}, separators=(",", ":")).encode()
        flags = (0x01 if user_present else 0) | 0x04 | 0x40
        auth_data = (hashlib.sha256(start["relyingPartyID"].encode()).digest() + bytes([flags]) + bytes(4) + bytes(16)
                     + len(self.credential_id).to_bytes(2, "big") + self.credential_id
                     + cbor({1: 2, 3: -7, -1: 1, -2: self.x, -3: self.y}))
        return {"credentialID": b64url(self.credential_id), "clientDataJSON": b64url(client_data),
                "attestationObject": b64url(cbor({"fmt": "none", "attStmt": {}, "authData": auth_data})),
                "transports": ["internal"]}

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
