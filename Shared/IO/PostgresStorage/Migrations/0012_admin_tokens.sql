-- Admin tokens: the admin API's credentials. Only a digest of each token is kept (SHA-256 of its text); the text
-- is shown once, when the token is made (passkey-admin token create).
CREATE TABLE admin_tokens (
    -- The token's public part: 16 hex digits, also in its text, in listings and in the audit trail.
    id           text        PRIMARY KEY CHECK (id ~ '^[0-9a-f]{16}$'),
    digest       bytea       NOT NULL CHECK (octet_length(digest) = 32),
    name         text        NOT NULL CHECK (char_length(name) BETWEEN 1 AND 64),
    scopes       text[]      NOT NULL CHECK (cardinality(scopes) BETWEEN 1 AND 3
                                             AND scopes <@ ARRAY['read', 'write', 'erase']),
    created_by   text        NOT NULL CHECK (char_length(created_by) BETWEEN 1 AND 128),
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    revoked_at   timestamptz,
    last_used_at timestamptz,
    CONSTRAINT admin_tokens_digest_key UNIQUE (digest)
);
