-- Account recovery: verified emails, one-time email codes, recovery codes, recovery sessions and the email outbox.

-- An address is verified once its owner proved they read mail sent to it; only a verified address can be used to
-- recover the account by email.
ALTER TABLE account_emails ADD COLUMN verified_at timestamptz;

-- A recovery session (authentication_method 'recovery') may only register a new passkey; registering one ends it.
-- The new check admits more than the old one, which every stored row passed, so it is added NOT VALID: enforced for
-- every row written from now on, without a scan of millions of sessions under the table's exclusive lock.
ALTER TABLE authentication_sessions DROP CONSTRAINT authentication_sessions_authentication_method_check;
ALTER TABLE authentication_sessions ADD CONSTRAINT authentication_sessions_authentication_method_check
    CHECK (authentication_method IN ('password', 'passkey', 'recovery')) NOT VALID;

-- One-time codes sent by email: only a salted SHA-256 digest of the code is kept. At most one code per address and
-- purpose is live: issuing one consumes the earlier ones. Each code allows a bounded number of attempts.
CREATE TABLE email_codes (
    id          uuid        PRIMARY KEY,
    account_id  uuid        NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email_id    uuid        NOT NULL REFERENCES account_emails (id) ON DELETE CASCADE,
    purpose     text        NOT NULL CHECK (purpose IN ('verification', 'recovery')),
    salt        bytea       NOT NULL CHECK (octet_length(salt) = 16),
    code_digest bytea       NOT NULL CHECK (octet_length(code_digest) = 32),
    attempts    integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    consumed_at timestamptz,
    CONSTRAINT email_codes_lifetime_check CHECK (expires_at > created_at)
);
CREATE INDEX email_codes_email_id_idx ON email_codes (email_id, purpose, created_at DESC);
CREATE INDEX email_codes_expires_at_idx ON email_codes (expires_at);
-- The sweep finds consumed codes through this one.
CREATE INDEX email_codes_consumed_at_idx ON email_codes (consumed_at) WHERE consumed_at IS NOT NULL;

-- A failed recovery finish that has no code to count an attempt against (an address no account has, one not
-- verified, one with no live code) updates one of these rows instead: it then costs what counting an attempt against
-- a real code costs, one row updated and one commit, so its time does not tell the two apart.
CREATE TABLE recovery_attempt_decoys (
    slot     smallint PRIMARY KEY CHECK (slot BETWEEN 0 AND 63),
    attempts bigint   NOT NULL DEFAULT 0
);
INSERT INTO recovery_attempt_decoys (slot) SELECT generate_series(0, 63);

-- Recovery codes a signed-in account generated: ten at a time, each usable once, only their SHA-256 kept.
-- Generating again deletes the earlier set.
CREATE TABLE recovery_codes (
    id          uuid        PRIMARY KEY,
    account_id  uuid        NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    code_digest bytea       NOT NULL CHECK (octet_length(code_digest) = 32),
    created_at  timestamptz NOT NULL DEFAULT now(),
    used_at     timestamptz
);
CREATE INDEX recovery_codes_account_id_idx ON recovery_codes (account_id);

-- Mail waiting to be sent, written in the transaction that decided to send it and sent by session-service's outbox
-- worker with retries. A message is sent while its row is locked and marked sent in the same transaction, so a
-- crash before the commit leaves it pending (sent again later) and a committed one is never sent again. `code` is
-- the one-time code the message carries, cleared once the message is sent or given up.
CREATE TABLE email_outbox (
    id              uuid        PRIMARY KEY,
    recipient       text        NOT NULL CHECK (char_length(recipient) BETWEEN 3 AND 254),
    template        text        NOT NULL CHECK (template IN ('email_verification', 'recovery_code')),
    code            text        CHECK (char_length(code) BETWEEN 1 AND 64),
    -- The code's expiry, shown in the message; a message still unsent by then is given up.
    expires_at      timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    attempts        integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    sent_at         timestamptz,
    failed_at       timestamptz,
    last_error      text        CHECK (char_length(last_error) <= 512)
);
CREATE INDEX email_outbox_due_idx ON email_outbox (next_attempt_at) WHERE sent_at IS NULL AND failed_at IS NULL;
CREATE INDEX email_outbox_sent_at_idx ON email_outbox (sent_at) WHERE sent_at IS NOT NULL;
CREATE INDEX email_outbox_failed_at_idx ON email_outbox (failed_at) WHERE failed_at IS NOT NULL;
