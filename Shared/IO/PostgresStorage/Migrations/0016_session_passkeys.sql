-- The passkey that signed a session in (passkey_credentials.id), kept on passkey sessions: a password may be removed
-- once a passkey has signed in, and a session counts for that only while it is live and its passkey still exists
-- (a passkey that was removed, or a session that was revoked, proves nothing about the passkeys the account has).
-- No foreign key: removing a passkey leaves its sessions as they are, and the rule's join no longer finds it.
-- Sessions stored before this migration have none; a passkey's recorded use (last_used_at) still counts for them.
ALTER TABLE authentication_sessions ADD COLUMN passkey_id uuid;
