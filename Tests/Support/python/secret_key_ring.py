"""The services' secret key ring as docs/security.md describes it, in Python, for the suites that check what the
database keeps: the ring is PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE (one 32-byte key a line, hex or base64, the current
first); each purpose's key is HKDF-SHA256 of a ring key with the salt b"passkey secret key ring" and the info
b"passkey/<purpose>/v1"; a key's ID is 8 bytes of the same HKDF with the info b"passkey/key-id/v1", in hex; a box is
nonce (12) ‖ ciphertext ‖ tag (16) of AES-256-GCM with the additional data b"passkey/<purpose>/v1" ‖ 0 ‖ context."""

import base64
import os
import pathlib

from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

SALT = b"passkey secret key ring"


def ring_keys(path):
    """The keys of a key file, the current one first."""
    keys = []
    for line in pathlib.Path(path).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keys.append(bytes.fromhex(line) if len(line) == 64 else base64.b64decode(line + "=" * (-len(line) % 4)))
    return keys


def _hkdf(key, info, length):
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=SALT, info=info).derive(key)


def key_id(key):
    return _hkdf(key, b"passkey/key-id/v1", 8).hex()


def purpose_key(key, purpose):
    return _hkdf(key, f"passkey/{purpose}/v1".encode(), 32)


def open_box(key, purpose, box, context):
    """The plaintext of `box` sealed under `key`'s `purpose` key for `context` (raises when it does not open)."""
    label = f"passkey/{purpose}/v1".encode()
    return AESGCM(purpose_key(key, purpose)).decrypt(box[:12], box[12:], label + b"\x00" + context)


def seal_box(key, purpose, plaintext, context):
    """`plaintext` sealed as the ring seals it: under `key`'s `purpose` key, bound to `context`."""
    label = f"passkey/{purpose}/v1".encode()
    nonce = os.urandom(12)
    return nonce + AESGCM(purpose_key(key, purpose)).encrypt(nonce, plaintext, label + b"\x00" + context)


def code_digest(key, salt, code):
    """The keyed digest of a one-time code: HMAC-SHA256 of the salt and the code under the digest key."""
    mac = hmac.HMAC(purpose_key(key, "email-code-digest"), hashes.SHA256())
    mac.update(salt + code.encode())
    return mac.finalize()
