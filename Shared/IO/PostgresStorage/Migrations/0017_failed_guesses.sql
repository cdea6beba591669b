-- Failed guesses per account, counted where every gateway and session-service replica sees them: wrong passwords
-- ('password') and wrong one-time or recovery codes ('code'), each kind apart. A row is a leaky bucket's level and
-- when it was stored: a failed guess adds one, the level drains at the limit's rate (100 an hour: a burst of 50,
-- then one every 72 s; docs/security.md), and a guess that finds it full is refused without being checked. Passkey
-- sign-in never reads it. The level is read with the sign-in or recovery lookup, so a sign-in that succeeds costs no
-- statement of its own, and a failure adds to it in one. A row whose level has drained is harmless: the next failure
-- starts from zero; one row per account and kind at most, gone with the account. Every failed guess rewrites its row:
-- the free space fillfactor leaves on each page keeps those updates on the page (HOT, no new index entry).
CREATE TABLE failed_guesses (
    account_id uuid             NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    kind       text             NOT NULL CHECK (kind IN ('password', 'code')),
    level      double precision NOT NULL CHECK (level >= 0),
    updated_at timestamptz      NOT NULL,
    PRIMARY KEY (account_id, kind)
) WITH (fillfactor = 70);
