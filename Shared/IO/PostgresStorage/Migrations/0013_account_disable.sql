-- An account an operator disabled (admin API): it cannot sign in by any method and recovery is refused until it is
-- enabled again. Its sessions are revoked when it is disabled.
ALTER TABLE accounts ADD COLUMN disabled_at timestamptz;
