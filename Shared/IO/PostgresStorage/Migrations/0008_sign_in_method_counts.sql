-- Accounts by the ways they can sign in (password only, both, passkey only), for the adoption gauges. The counts are
-- maintained, so reading them costs a few rows, never a scan of the accounts.
--
-- Every statement that inserts or deletes password or passkey rows appends, from a statement-level trigger, one row
-- per sign-in method whose count it changed: an append, so concurrent sign-ups never wait on a shared counter row
-- and cannot deadlock on one. The reader folds the appended rows into the totals now and then (one DELETE ...
-- RETURNING into an UPDATE of three rows) and reads totals plus whatever was appended since.
--
-- The credential triggers compare each touched account's state after the statement with the state before it, derived
-- from the rows the statement changed (the transition table), so a statement touching many rows of one account counts
-- it once. A single statement that changes both password and passkey rows of one account would be counted twice; no
-- statement does (each table is written by its own statements, also within one transaction).

CREATE FUNCTION account_sign_in_method(has_password boolean, passkeys bigint) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN has_password AND passkeys > 0 THEN 'both'
                WHEN has_password THEN 'password_only'
                WHEN passkeys > 0 THEN 'passkey_only' END
$$;

CREATE TABLE sign_in_method_totals (
    method   text   PRIMARY KEY CHECK (method IN ('password_only', 'both', 'passkey_only')),
    accounts bigint NOT NULL
);

CREATE TABLE sign_in_method_changes (
    id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    method text   NOT NULL CHECK (method IN ('password_only', 'both', 'passkey_only')),
    delta  bigint NOT NULL CHECK (delta <> 0)
);

-- The accounts that exist already.
INSERT INTO sign_in_method_totals (method, accounts)
SELECT m.method, count(s.method)
FROM (VALUES ('password_only'), ('both'), ('passkey_only')) AS m (method)
LEFT JOIN (
    SELECT account_sign_in_method(
               EXISTS (SELECT 1 FROM password_credentials p WHERE p.account_id = a.id),
               (SELECT count(*) FROM passkey_credentials k WHERE k.account_id = a.id)) AS method
    FROM accounts a) AS s ON s.method = m.method
GROUP BY m.method;

CREATE FUNCTION record_sign_in_method_changes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    -- The rows in `changed` were added (+1) or removed (-1) by the statement.
    step bigint := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    IF TG_TABLE_NAME = 'password_credentials' THEN
        -- An account has at most one password row, so each row is the account gaining (or losing) its password:
        -- only whether it has a passkey is looked up, one index probe a row (a bulk import's whole cost here).
        -- An account deleted by this statement was counted out before its rows went (accounts_sign_in_method_delete).
        INSERT INTO sign_in_method_changes (method, delta)
        WITH moves AS (
                 SELECT account_sign_in_method(step < 0, passkeys) AS before,
                        account_sign_in_method(step > 0, passkeys) AS after
                 FROM (SELECT CASE WHEN EXISTS (SELECT 1 FROM passkey_credentials k WHERE k.account_id = c.account_id)
                                   THEN 1 ELSE 0 END AS passkeys
                       FROM changed c
                       WHERE step > 0 OR EXISTS (SELECT 1 FROM accounts a WHERE a.id = c.account_id)) AS s),
             deltas AS (
                 SELECT before AS method, -1 AS delta FROM moves UNION ALL SELECT after, 1 FROM moves)
        SELECT method, sum(delta) FROM deltas
        WHERE method IS NOT NULL
        GROUP BY method
        HAVING sum(delta) <> 0;
    ELSE
        -- Passkeys: an account's count before the statement is its count now less (or plus) the rows it changed.
        INSERT INTO sign_in_method_changes (method, delta)
        WITH touched AS (
                 SELECT c.account_id, count(*) AS rows FROM changed c
                 WHERE EXISTS (SELECT 1 FROM accounts a WHERE a.id = c.account_id)
                 GROUP BY c.account_id),
             state AS (
                 SELECT t.rows,
                        EXISTS (SELECT 1 FROM password_credentials p WHERE p.account_id = t.account_id) AS has_password,
                        (SELECT count(*) FROM passkey_credentials k WHERE k.account_id = t.account_id) AS passkeys_now
                 FROM touched t),
             deltas AS (
                 SELECT account_sign_in_method(has_password, passkeys_now - step * rows) AS method, -1 AS delta
                 FROM state
                 UNION ALL
                 SELECT account_sign_in_method(has_password, passkeys_now), 1 FROM state)
        SELECT method, sum(delta) FROM deltas
        WHERE method IS NOT NULL
        GROUP BY method
        HAVING sum(delta) <> 0;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER password_credentials_sign_in_method_insert AFTER INSERT ON password_credentials
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION record_sign_in_method_changes();
CREATE TRIGGER password_credentials_sign_in_method_delete AFTER DELETE ON password_credentials
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION record_sign_in_method_changes();
CREATE TRIGGER passkey_credentials_sign_in_method_insert AFTER INSERT ON passkey_credentials
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION record_sign_in_method_changes();
CREATE TRIGGER passkey_credentials_sign_in_method_delete AFTER DELETE ON passkey_credentials
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION record_sign_in_method_changes();

-- A deleted account leaves its method's count before the cascades remove its credentials: the statement-level
-- triggers of cascaded deletes run when the whole DELETE has finished, when neither table shows what it had.
CREATE FUNCTION record_deleted_account_sign_in_method() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    method text := account_sign_in_method(
        EXISTS (SELECT 1 FROM password_credentials p WHERE p.account_id = OLD.id),
        (SELECT count(*) FROM passkey_credentials k WHERE k.account_id = OLD.id));
BEGIN
    IF method IS NOT NULL THEN
        INSERT INTO sign_in_method_changes (method, delta) VALUES (method, -1);
    END IF;
    RETURN OLD;
END
$$;

CREATE TRIGGER accounts_sign_in_method_delete BEFORE DELETE ON accounts
    FOR EACH ROW EXECUTE FUNCTION record_deleted_account_sign_in_method();
