-- Accounts brought across from another system by passkey-import.

-- The operator's own identifier of an imported account, for their joins; unique when present.
ALTER TABLE accounts ADD COLUMN external_id text CHECK (char_length(external_id) BETWEEN 1 AND 256);
ALTER TABLE accounts ADD CONSTRAINT accounts_external_id_key UNIQUE (external_id);

-- For an imported account, the SHA-256 digest of the record it was made from (NULL for every other account): a
-- later run that meets the same record for the same email knows the line is unchanged and writes nothing. A column
-- rather than a table of its own, so that a million-account import writes no fourth row, index entry and foreign
-- key check per account.
ALTER TABLE accounts ADD COLUMN import_digest bytea CHECK (octet_length(import_digest) = 32);
