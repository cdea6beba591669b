-- Rows that live only while a passkey ceremony is in progress (slide 14). Each is consumed once by an atomic
-- UPDATE ... WHERE consumed_at IS NULL AND expires_at > now(), and swept after it expires.

-- Adding a passkey to an existing account.
CREATE TABLE passkey_registration_challenges (
    id          uuid        PRIMARY KEY,
    account_id  uuid        NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    challenge   bytea       NOT NULL CHECK (octet_length(challenge) BETWEEN 32 AND 64),
    -- 'conditional' (Automatic Passkey Upgrade) is decided when the challenge is issued and lets UP be 0.
    mode        text        NOT NULL CHECK (mode IN ('modal', 'conditional')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    consumed_at timestamptz,
    CONSTRAINT passkey_registration_challenges_lifetime_check CHECK (expires_at > created_at)
);
CREATE INDEX passkey_registration_challenges_account_id_idx ON passkey_registration_challenges (account_id);
CREATE INDEX passkey_registration_challenges_expires_at_idx ON passkey_registration_challenges (expires_at);

-- Signing in with a passkey. Not bound to an account: the credential names it at finish.
CREATE TABLE passkey_authentication_challenges (
    id          uuid        PRIMARY KEY,
    challenge   bytea       NOT NULL CHECK (octet_length(challenge) BETWEEN 32 AND 64),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    consumed_at timestamptz,
    CONSTRAINT passkey_authentication_challenges_lifetime_check CHECK (expires_at > created_at)
);
CREATE INDEX passkey_authentication_challenges_expires_at_idx ON passkey_authentication_challenges (expires_at);

-- Creating a new account with a passkey. No foreign key: the account does not exist until completion, when it is
-- created with id = prospective_account_id.
CREATE TABLE passkey_account_registrations (
    id                     uuid        PRIMARY KEY,
    prospective_account_id uuid        NOT NULL,
    user_handle            bytea       NOT NULL CHECK (octet_length(user_handle) BETWEEN 1 AND 64),
    email                  text        CHECK (char_length(email) BETWEEN 3 AND 254),
    display_name           text        CHECK (char_length(display_name) BETWEEN 1 AND 128),
    challenge              bytea       NOT NULL CHECK (octet_length(challenge) BETWEEN 32 AND 64),
    created_at             timestamptz NOT NULL DEFAULT now(),
    expires_at             timestamptz NOT NULL,
    consumed_at            timestamptz,
    completed_at           timestamptz,
    CONSTRAINT passkey_account_registrations_prospective_account_id_key UNIQUE (prospective_account_id),
    CONSTRAINT passkey_account_registrations_user_handle_key UNIQUE (user_handle),
    CONSTRAINT passkey_account_registrations_lifetime_check CHECK (expires_at > created_at),
    CONSTRAINT passkey_account_registrations_completion_check CHECK (completed_at IS NULL OR consumed_at IS NOT NULL)
);
CREATE INDEX passkey_account_registrations_expires_at_idx ON passkey_account_registrations (expires_at);
