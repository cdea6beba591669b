-- session-service deletes ended sessions in batches: those past expires_at (indexed since 0001) and those revoked
-- before a retention, found through this index. It holds revoked sessions only, so issuing a session costs no more.
CREATE INDEX authentication_sessions_revoked_at_idx ON authentication_sessions (revoked_at)
    WHERE revoked_at IS NOT NULL;
