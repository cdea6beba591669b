-- Fresh sign-ins for sensitive changes, and security notifications (docs/security.md).

-- When the session last proved a credential: set by a reauthentication (a passkey or password ceremony bound to the
-- session); NULL means its sign-in, `created_at`. Sensitive changes need it within PASSKEY_REAUTHENTICATION_WINDOW.
ALTER TABLE authentication_sessions ADD COLUMN authenticated_at timestamptz;

-- Security notifications go through the outbox like codes: queued by the transaction that made the change, to every
-- verified address of the account, with no secret. `notice` holds what the message names (when, from which
-- address, which passkey), never a code. The new check admits more than the old one, so it is added NOT VALID.
ALTER TABLE email_outbox
    ADD COLUMN notice jsonb CHECK (octet_length(notice::text) <= 1024),
    DROP CONSTRAINT email_outbox_template_check,
    ADD CONSTRAINT email_outbox_template_check CHECK (template IN (
        'email_verification', 'recovery_code', 'notice_passkey_added', 'notice_passkey_removed', 'notice_password_set',
        'notice_password_changed', 'notice_password_removed', 'notice_password_reset',
        'notice_recovery_codes_generated', 'notice_recovery_completed', 'notice_account_disabled',
        'notice_account_enabled')) NOT VALID;
