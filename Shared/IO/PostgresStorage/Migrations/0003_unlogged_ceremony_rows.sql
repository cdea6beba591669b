-- Ceremony rows live for minutes and mean nothing after a crash: a client whose ceremony was in flight starts it
-- again. As UNLOGGED tables they stay out of the write-ahead log, so issuing and consuming a challenge waits for no
-- WAL flush; accounts, credentials and sessions stay fully durable. After a crash, and on a streaming replica, these
-- tables are empty, which fails closed: a challenge that is not there cannot be consumed. (An unlogged table may
-- reference a logged one, as passkey_registration_challenges references accounts.)
ALTER TABLE passkey_registration_challenges SET UNLOGGED;
ALTER TABLE passkey_authentication_challenges SET UNLOGGED;
ALTER TABLE passkey_account_registrations SET UNLOGGED;
