-- Accounts brought across from another system by passkey-import.

-- The operator's own identifier of an imported account, for their joins; unique when present.
ALTER TABLE accounts ADD COLUMN external_id text CHECK (char_length(external_id) BETWEEN 1 AND 256);
ALTER TABLE accounts ADD CONSTRAINT accounts_external_id_key UNIQUE (external_id);

-- The record each imported account was made from, as a SHA-256 digest of its fields: a later run that meets the
-- same record for the same email knows the line is unchanged and writes nothing. The line is the one of the run
-- that created the account, for the operator.
CREATE TABLE imported_accounts (
    account_id    uuid        PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    record_digest bytea       NOT NULL CHECK (octet_length(record_digest) = 32),
    line_number   bigint      NOT NULL CHECK (line_number > 0),
    imported_at   timestamptz NOT NULL DEFAULT now()
);
