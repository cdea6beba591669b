-- The audit trail: one row per change to an account, written in the same transaction as the change by the
-- service that makes it, so an event exists exactly when its change committed. Failed attempts (a wrong password,
-- a bad assertion) change nothing and stay log lines and metrics only: storing them would let anyone make the
-- database write at will.
CREATE TABLE audit_events (
    -- Time-ordered: IDs are handed out in insertion order, and pages are read by ID.
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    occurred_at    timestamptz NOT NULL DEFAULT now(),
    type           text        NOT NULL CHECK (char_length(type) BETWEEN 1 AND 64),
    -- No foreign key: the trail outlives an erased account (its tombstone keeps only the ID).
    account_id     uuid,
    -- Who made the change: the account's user, an admin token (actor_id its ID) or the system (a sweep, an import).
    actor          text        NOT NULL CHECK (actor IN ('user', 'admin', 'system')),
    actor_id       text        CHECK (char_length(actor_id) <= 128),
    request_id     text        CHECK (char_length(request_id) <= 128),
    client_address text        CHECK (char_length(client_address) <= 64),
    detail         jsonb       NOT NULL DEFAULT '{}' CHECK (octet_length(detail::text) <= 4096)
);
-- One account's events, newest first. A time range (and the retention sweep) reads a BRIN index: rows are appended
-- in time order, so a few bytes per block range find them, and every sign-in's event does not pay for another
-- B-tree insert.
CREATE INDEX audit_events_account_idx ON audit_events (account_id, id) WHERE account_id IS NOT NULL;
CREATE INDEX audit_events_occurred_at_idx ON audit_events USING brin (occurred_at);
