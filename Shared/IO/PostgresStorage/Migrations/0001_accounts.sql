-- Accounts and how they sign in (slide 13): an account owns its emails, at most one password,
-- any number of passkeys, and its sessions.

CREATE TABLE accounts (
    id           uuid        PRIMARY KEY,
    display_name text        NOT NULL CHECK (char_length(display_name) BETWEEN 1 AND 128),
    -- The WebAuthn user.id: random, stable for the account, the same in every registration.
    user_handle  bytea       NOT NULL CHECK (octet_length(user_handle) BETWEEN 1 AND 64),
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT accounts_user_handle_key UNIQUE (user_handle)
);

CREATE TABLE account_emails (
    id               uuid        PRIMARY KEY,
    account_id       uuid        NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email            text        NOT NULL CHECK (char_length(email) BETWEEN 3 AND 254),
    -- Trimmed and lowercased; the one form used for lookups and uniqueness.
    normalized_email text        NOT NULL CHECK (char_length(normalized_email) BETWEEN 3 AND 254),
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT account_emails_normalized_email_key UNIQUE (normalized_email)
);
CREATE INDEX account_emails_account_id_idx ON account_emails (account_id);

CREATE TABLE password_credentials (
    account_id    uuid        PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    -- A PHC string, e.g. $argon2id$v=19$m=19456,t=2,p=1$salt$hash.
    password_hash text        NOT NULL CHECK (char_length(password_hash) BETWEEN 1 AND 512),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE passkey_credentials (
    id                 uuid        PRIMARY KEY,
    credential_id      bytea       NOT NULL CHECK (octet_length(credential_id) BETWEEN 1 AND 1023),
    account_id         uuid        NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    -- The COSE_Key exactly as the authenticator sent it.
    public_key         bytea       NOT NULL CHECK (octet_length(public_key) BETWEEN 1 AND 4096),
    algorithm          integer     NOT NULL,
    sign_count         bigint      NOT NULL DEFAULT 0 CHECK (sign_count BETWEEN 0 AND 4294967295),
    backup_eligible    boolean     NOT NULL,
    backed_up          boolean     NOT NULL,
    uv_initialized     boolean     NOT NULL,
    transports         text[]      NOT NULL DEFAULT '{}',
    aaguid             uuid        NOT NULL,
    attestation_format text        NOT NULL,
    -- Set when a sign-in showed a counter that did not increase; never cleared automatically.
    clone_warning      boolean     NOT NULL DEFAULT false,
    name               text        NOT NULL CHECK (char_length(name) BETWEEN 1 AND 128),
    created_at         timestamptz NOT NULL DEFAULT now(),
    last_used_at       timestamptz,
    CONSTRAINT passkey_credentials_credential_id_key UNIQUE (credential_id),
    -- A backed-up credential must be backup eligible.
    CONSTRAINT passkey_credentials_backup_state_check CHECK (backup_eligible OR NOT backed_up)
);
CREATE INDEX passkey_credentials_account_id_idx ON passkey_credentials (account_id, created_at);

CREATE TABLE authentication_sessions (
    id                    uuid        PRIMARY KEY,
    account_id            uuid        NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    -- SHA-256 of the bearer token; the token itself is never stored.
    token_digest          bytea       NOT NULL CHECK (octet_length(token_digest) = 32),
    authentication_method text        NOT NULL CHECK (authentication_method IN ('password', 'passkey')),
    created_at            timestamptz NOT NULL DEFAULT now(),
    expires_at            timestamptz NOT NULL,
    revoked_at            timestamptz,
    CONSTRAINT authentication_sessions_token_digest_key UNIQUE (token_digest),
    CONSTRAINT authentication_sessions_lifetime_check CHECK (expires_at > created_at)
);
CREATE INDEX authentication_sessions_account_id_idx ON authentication_sessions (account_id, created_at DESC);
CREATE INDEX authentication_sessions_expires_at_idx ON authentication_sessions (expires_at);
