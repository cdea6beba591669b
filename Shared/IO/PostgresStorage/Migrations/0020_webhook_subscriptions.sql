-- Webhooks cost the write path nothing unless an enabled endpoint takes the event's type. Migration 0014's
-- statement trigger ran `INSERT INTO webhook_deliveries … SELECT` (and built a transition table) for every stored
-- event, a sign-in's included, even with no endpoint registered. Now the outbox is filled by a row trigger whose
-- WHEN clause lists the event types that enabled endpoints take, as constants: an event of another type queues no
-- trigger event, calls no function and runs no statement. The list is rewritten whenever the set of enabled
-- endpoints or their types changes, in the transaction that changes it.
--
-- Never losing an event: rewriting the trigger takes audit_events' SHARE ROW EXCLUSIVE lock, which waits for every
-- transaction that has stored an event and holds back every one that would store one until the change commits. So
-- an event is either stored before the endpoint change committed (as before: it was not the endpoint's) or judged
-- by the new list and joined, by the trigger's own statement, against the endpoints as they are then.

-- The delivery of one stored event to every enabled endpoint that takes its type: the body is migration 0014's.
CREATE FUNCTION audit_event_to_webhooks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_deliveries (endpoint_id, event_id, event_type, payload)
    SELECT w.id, NEW.id, NEW.type,
           json_build_object(
               'type', NEW.type,
               'timestamp', to_char(NEW.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
               'data', json_build_object(
                   'eventId', NEW.id, 'accountId', NEW.account_id, 'actor', NEW.actor, 'actorId', NEW.actor_id,
                   'requestId', NEW.request_id, 'clientAddress', NEW.client_address, 'detail', NEW.detail))::text
    FROM webhook_endpoints w
    WHERE w.disabled_at IS NULL AND (NEW.type = ANY (w.event_types) OR '*' = ANY (w.event_types));
    RETURN NULL;
END
$$;

-- Points the trigger at the types enabled endpoints take now, and at `also` (the types of an endpoint about to be
-- created or enabled, so that the statement doing it stores its own event under the new list). '*' among them:
-- every event. None: a WHEN clause that is never true.
CREATE FUNCTION refresh_webhook_subscriptions(also text[] DEFAULT '{}') RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    types text[];
BEGIN
    LOCK TABLE audit_events IN SHARE ROW EXCLUSIVE MODE;
    -- Read after the lock (a new snapshot per statement): every committed endpoint change is seen, and one not yet
    -- committed refreshes again, after this one, before it commits.
    SELECT coalesce(array_agg(DISTINCT t ORDER BY t), '{}') INTO types
    FROM (SELECT unnest(event_types) AS t FROM webhook_endpoints WHERE disabled_at IS NULL
          UNION ALL SELECT unnest(also)) AS subscribed;
    IF '*' = ANY (types) THEN
        CREATE OR REPLACE TRIGGER audit_events_webhooks AFTER INSERT ON audit_events
            FOR EACH ROW EXECUTE FUNCTION audit_event_to_webhooks();
    ELSE
        EXECUTE format(
            'CREATE OR REPLACE TRIGGER audit_events_webhooks AFTER INSERT ON audit_events FOR EACH ROW '
            'WHEN (NEW.type = ANY (%L::text[])) EXECUTE FUNCTION audit_event_to_webhooks()', types);
    END IF;
END
$$;

CREATE FUNCTION webhook_endpoints_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM refresh_webhook_subscriptions();
    RETURN NULL;
END
$$;

-- At commit, once per changed row (a change is rare: an operator's, or a failing endpoint disabled), whichever
-- release's code made it. Deferred, so no event of the transaction's own statements is still pending on
-- audit_events when the trigger is replaced.
CREATE CONSTRAINT TRIGGER webhook_endpoints_subscriptions AFTER INSERT OR DELETE ON webhook_endpoints
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION webhook_endpoints_changed();
CREATE CONSTRAINT TRIGGER webhook_endpoints_subscriptions_changed AFTER UPDATE ON webhook_endpoints
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN ((OLD.disabled_at IS NULL) IS DISTINCT FROM (NEW.disabled_at IS NULL)
          OR OLD.event_types IS DISTINCT FROM NEW.event_types)
    EXECUTE FUNCTION webhook_endpoints_changed();

DROP TRIGGER audit_events_webhooks ON audit_events;
DROP FUNCTION audit_events_to_webhooks();
SELECT refresh_webhook_subscriptions();
