-- Webhooks: endpoints registered through the admin API, and an outbox of deliveries that the database fills in the
-- transaction that stores each audit event. A delivery therefore exists exactly when its event committed, and is
-- delivered at least once by session-service's worker, which leases an endpoint at a time.
CREATE TABLE webhook_endpoints (
    id              uuid        PRIMARY KEY,
    url             text        NOT NULL CHECK (char_length(url) BETWEEN 1 AND 2048),
    -- Audit event types ('audit.sign_in.succeeded', …), or '*' for all.
    event_types     text[]      NOT NULL CHECK (cardinality(event_types) BETWEEN 1 AND 64),
    description     text        NOT NULL DEFAULT '' CHECK (char_length(description) <= 256),
    -- The HMAC key of the Standard Webhooks signature; the receiver holds it too.
    secret          bytea       NOT NULL CHECK (octet_length(secret) = 32),
    created_at      timestamptz NOT NULL DEFAULT now(),
    created_by      text        NOT NULL CHECK (char_length(created_by) BETWEEN 1 AND 128),
    disabled_at     timestamptz,
    disabled_reason text        CHECK (char_length(disabled_reason) <= 512),
    -- Failed attempts in a row, since when, and when the next attempt is due.
    failures        integer     NOT NULL DEFAULT 0,
    failing_since   timestamptz,
    retry_at        timestamptz,
    -- The worker delivering to the endpoint now, until when.
    lease           uuid,
    leased_until    timestamptz
);

CREATE TABLE webhook_deliveries (
    -- Sent as webhook-id (msg_<id>), the same on every attempt.
    id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    endpoint_id  uuid        NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    -- An erased account's events take their deliveries with them, as does the trail's retention.
    event_id     bigint      NOT NULL REFERENCES audit_events (id) ON DELETE CASCADE,
    event_type   text        NOT NULL,
    -- The body, fixed when the event was stored: every attempt sends the same bytes.
    payload      text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    attempts     integer     NOT NULL DEFAULT 0,
    delivered_at timestamptz,
    last_error   text        CHECK (char_length(last_error) <= 512)
);
-- An endpoint's waiting deliveries in event order; the foreign key's deletes; the sweep of delivered rows.
CREATE INDEX webhook_deliveries_waiting_idx ON webhook_deliveries (endpoint_id, event_id) WHERE delivered_at IS NULL;
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);
CREATE INDEX webhook_deliveries_delivered_idx ON webhook_deliveries (delivered_at) WHERE delivered_at IS NOT NULL;

-- One delivery per stored event and enabled endpoint that takes its type, in the storing transaction. A statement
-- trigger, so a statement that stores many events runs it once.
CREATE FUNCTION audit_events_to_webhooks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_deliveries (endpoint_id, event_id, event_type, payload)
    SELECT w.id, e.id, e.type,
           json_build_object(
               'type', e.type,
               'timestamp', to_char(e.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
               'data', json_build_object(
                   'eventId', e.id, 'accountId', e.account_id, 'actor', e.actor, 'actorId', e.actor_id,
                   'requestId', e.request_id, 'clientAddress', e.client_address, 'detail', e.detail))::text
    FROM stored_events e
    JOIN webhook_endpoints w
      ON w.disabled_at IS NULL AND (e.type = ANY (w.event_types) OR '*' = ANY (w.event_types));
    RETURN NULL;
END
$$;

CREATE TRIGGER audit_events_webhooks AFTER INSERT ON audit_events
    REFERENCING NEW TABLE AS stored_events FOR EACH STATEMENT EXECUTE FUNCTION audit_events_to_webhooks();
