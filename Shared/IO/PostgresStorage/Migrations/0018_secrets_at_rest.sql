-- No usable secret at rest: what read access to the database (a replica, a backup, an analytics role) shows of
-- one-time codes and webhook secrets is useless without the key ring, which the services read from
-- PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE and which is never stored here (docs/security.md). Each sealed or keyed value
-- names the ring key it was made with, so that the ring can rotate.

-- The code a queued message carries, sealed (AES-256-GCM: nonce, ciphertext, tag) and bound to the message's ID; the
-- outbox worker opens it as it sends the message. `code` stays for the rows queued before this migration, which are
-- still sent and are cleared, like every code, once sent or given up; nothing writes it any more.
ALTER TABLE email_outbox
    ADD COLUMN sealed_code bytea CHECK (octet_length(sealed_code) BETWEEN 29 AND 92),
    ADD COLUMN code_key_id text  CHECK (char_length(code_key_id) BETWEEN 1 AND 64),
    ADD CONSTRAINT email_outbox_code_key_check CHECK ((sealed_code IS NULL) = (code_key_id IS NULL));

-- A code's digest becomes HMAC-SHA256 of its salt and the code, under the ring key `digest_key_id` names. A row
-- without one holds SHA-256 of the salt and the code, which 10^8 guesses reverse: such rows are still checked, and
-- expire within ten minutes of being made.
ALTER TABLE email_codes ADD COLUMN digest_key_id text CHECK (char_length(digest_key_id) BETWEEN 1 AND 64);

-- An endpoint's signing secret, sealed (60 bytes) under the ring key `secret_key_id` names and bound to the
-- endpoint's ID. A row without one holds the 32-byte secret in clear, as registered before this migration:
-- session-service seals those as it starts, and seals again any secret under a key other than the current one.
ALTER TABLE webhook_endpoints
    ADD COLUMN secret_key_id text CHECK (char_length(secret_key_id) BETWEEN 1 AND 64),
    DROP CONSTRAINT webhook_endpoints_secret_check,
    ADD CONSTRAINT webhook_endpoints_secret_check
        CHECK (octet_length(secret) = CASE WHEN secret_key_id IS NULL THEN 32 ELSE 60 END);
