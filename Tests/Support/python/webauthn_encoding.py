"""The encodings the Python test peers need to build WebAuthn responses by hand: base64url as WebAuthn's JSON
writes it, and canonical CBOR for COSE keys and attestation objects."""

import base64


def b64url(data: bytes) -> str:
    """base64url without padding."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def cbor(value) -> bytes:
    """Canonical CBOR (RFC 8949 §4.2.3 key order) for the few types a COSE key and an attestation object need:
    integers, byte and text strings, and maps."""

    def head(major, length):
        if length < 24:
            return bytes([major << 5 | length])
        if length < 256:
            return bytes([major << 5 | 24, length])
        return bytes([major << 5 | 25]) + length.to_bytes(2, "big")

    if isinstance(value, int):
        return head(0, value) if value >= 0 else head(1, -1 - value)
    if isinstance(value, bytes):
        return head(2, len(value)) + value
    if isinstance(value, str):
        encoded = value.encode()
        return head(3, len(encoded)) + encoded
    if isinstance(value, dict):
        # Shorter encoded keys first, then bytewise.
        items = sorted(((cbor(k), cbor(v)) for k, v in value.items()), key=lambda pair: (len(pair[0]), pair[0]))
        return head(5, len(items)) + b"".join(k + v for k, v in items)
    raise TypeError(type(value))
