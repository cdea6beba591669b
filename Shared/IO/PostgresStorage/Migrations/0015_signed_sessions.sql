-- Signed access tokens and refresh tokens (docs/sessions.md).
--
-- A session with refresh tokens holds the digest of its current refresh token and that token's generation; each
-- refresh moves the session to the next generation and keeps the replaced token's digest in
-- session_refresh_tokens, with its successor sealed under a key only the replaced token's holder can derive. So a
-- repeat within the reuse window gets the same successor, and any older token presented again is recognised (its
-- digest matches a stored one) and ends the session. Sessions of opaque bearer tokens leave the columns null.
ALTER TABLE authentication_sessions
    ADD COLUMN refresh_generation integer CHECK (refresh_generation >= 0),
    ADD COLUMN refresh_digest     bytea   CHECK (octet_length(refresh_digest) = 32),
    -- When the current refresh token was issued: the idle timeout counts from here.
    ADD COLUMN refreshed_at       timestamptz,
    -- The access tokens' amr when not the sign-in method's own (a session a completed recovery issued).
    ADD COLUMN method_references  text[]  CHECK (cardinality(method_references) <= 8),
    ADD CONSTRAINT authentication_sessions_refresh_check
        CHECK ((refresh_digest IS NULL) = (refresh_generation IS NULL) AND (refresh_digest IS NULL) = (refreshed_at IS NULL));

CREATE TABLE session_refresh_tokens (
    session_id       uuid        NOT NULL REFERENCES authentication_sessions (id) ON DELETE CASCADE,
    generation       integer     NOT NULL CHECK (generation >= 0),
    digest           bytea       NOT NULL CHECK (octet_length(digest) = 32),
    rotated_at       timestamptz NOT NULL,
    -- The next generation's token, sealed (AES-256-GCM) under a key derived from this token's secret.
    successor_sealed bytea       NOT NULL CHECK (octet_length(successor_sealed) <= 256),
    PRIMARY KEY (session_id, generation)
);

-- The keys access tokens are signed with. The private key is sealed under the key-encryption key, which only the
-- processes that issue sessions hold; the public JWK is what the JWKS serves.
CREATE TABLE session_signing_keys (
    key_id             text        PRIMARY KEY CHECK (char_length(key_id) BETWEEN 1 AND 128),
    algorithm          text        NOT NULL CHECK (algorithm IN ('ES256', 'EdDSA')),
    public_jwk         jsonb       NOT NULL CHECK (octet_length(public_jwk::text) <= 1024),
    private_key_sealed bytea       NOT NULL CHECK (octet_length(private_key_sealed) <= 1024),
    created_at         timestamptz NOT NULL,
    activates_at       timestamptz NOT NULL CHECK (activates_at >= created_at),
    retired_at         timestamptz
);
