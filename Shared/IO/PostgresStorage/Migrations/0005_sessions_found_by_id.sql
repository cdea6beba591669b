-- A bearer token now carries its session's ID (time-ordered, UUIDv7) before its secret, so a session is found by
-- primary key and its digest compared afterwards. The unique index on the digest goes: every sign-in inserted into
-- it at a random place, which with millions of sessions stored meant a random index page, and after each checkpoint
-- a full-page image in the WAL, per sign-in. Sessions issued before this migration carry tokens of the old form,
-- which no longer validate: their users sign in again.
ALTER TABLE authentication_sessions DROP CONSTRAINT authentication_sessions_token_digest_key;
