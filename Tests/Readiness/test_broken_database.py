"""Readiness runs a statement that exercises a trigger function; a request that meets a broken database is 503."""

import subprocess
import time
import uuid

PASSWORD = "readiness suite password"
# What a backend whose PL/pgSQL library can no longer be loaded answers; raised from the webhook trigger function,
# which every stored audit event (a sign-in's among them) runs once an endpoint takes every type.
BROKEN = """CREATE OR REPLACE FUNCTION audit_event_to_webhooks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'could not access file "$libdir/plpgsql": No such file or directory' USING ERRCODE = '58P01';
END
$$"""


def readiness(stack):
    response = stack.request("GET", "/readyz")
    return response.status, response.json()


def wait_for_readiness(stack, status, timeout=15):
    deadline = time.monotonic() + timeout
    while True:
        current = readiness(stack)
        if current[0] == status:
            return current
        assert time.monotonic() < deadline, f"/readyz stayed {current}, not {status}"
        time.sleep(0.2)


def sign_up(stack):
    email = f"ready-{uuid.uuid4().hex[:10]}@example.com"
    return email, stack.request("POST", "/v1/accounts/password",
                                {"email": email, "password": PASSWORD, "displayName": "Ada"})


def sign_in(stack, email):
    return stack.request("POST", "/v1/sessions/password", {"email": email, "password": PASSWORD})


def test_a_broken_trigger_function_fails_readiness_and_requests_are_503_with_retry_after(stack):
    email, created = sign_up(stack)
    assert created.status == 201, created.body
    assert sign_in(stack, email).status == 200
    assert readiness(stack)[0] == 200
    # An endpoint that takes every event type (its URL never resolves): the trigger now runs for every audit event.
    stack.sql("INSERT INTO webhook_endpoints (id, url, event_types, secret, created_by) VALUES (gen_random_uuid(), "
              "'https://webhooks.invalid/readiness', '{*}', decode(repeat('00', 32), 'hex'), 'readiness-suite')")
    original = subprocess.run(
        ["psql", stack.url, "-Atq", "-v", "ON_ERROR_STOP=1", "-c",
         "SELECT pg_get_functiondef('audit_event_to_webhooks'::regproc)"],
        check=True, capture_output=True, text=True).stdout

    stack.sql(BROKEN)
    # At once, before any readiness check has run: the sign-in's own statement meets the broken function.
    refused = sign_in(stack, email)
    assert refused.status == 503, refused.body
    assert refused.json()["code"] == "unavailable"
    assert refused.headers["Retry-After"] == "2"
    assert "58P01" not in refused.body.decode() and "plpgsql" not in refused.body.decode()
    _, refused_sign_up = sign_up(stack)
    assert refused_sign_up.status == 503 and refused_sign_up.headers["Retry-After"] == "2", refused_sign_up.body

    # Then every service's readiness, which runs a trigger function as a sign-in does, notices: SELECT 1 still works.
    wait_for_readiness(stack, 503)
    deadline = time.monotonic() + 15
    while set(readiness(stack)[1]["services"].values()) != {"unavailable"}:
        assert time.monotonic() < deadline, readiness(stack)
        time.sleep(0.2)
    assert stack.sql("SELECT 1") == [["1"]]
    log = (stack.logs / "session-service.log").read_text()
    assert "rpc.database_failed" in log and "58P01" in log
    assert "database.unreachable" in log
    # The gateway's own answer while no service is ready carries Retry-After too.
    assert sign_in(stack, email).headers["Retry-After"] == "2"

    stack.sql(original)
    wait_for_readiness(stack, 200)
    assert sign_in(stack, email).status == 200
    # The readiness checks left no events behind.
    assert stack.sql("SELECT count(*) FROM audit_events WHERE type = 'readiness.check'") == [["0"]]
