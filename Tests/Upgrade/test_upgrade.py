"""An upgrade from the previous release and a rollback, each under passkey sign-in load and a session kept in use.

Upgrade: the previous release serves; this build's migrations are applied while it does; then challenge-service,
verification-service, session-service and the gateway are rolled to this build, one replica at a time. Rollback:
every process back to the previous release's build, the schema staying this build's. Neither may fail a single
sign-in, refresh or session check, and every session issued before (by either build) must still be valid after.

The tests run in order and share one stack."""

from __future__ import annotations

import time

import pytest

from conftest import (
    BIN, ROOT, SERVICES, ReplicatedStack, SessionLoad, SignInLoad, previous_release, session_id, version_of)

VERSION = (ROOT / "VERSION").read_text().strip()


@pytest.fixture(scope="module")
def stack(previous_bin):
    stack = ReplicatedStack(previous_bin)
    yield stack
    stack.close()


@pytest.fixture(scope="module")
def issued():
    """The access tokens of the sessions issued so far, by every build, in order."""
    return []


def assert_still_valid(stack: ReplicatedStack, tokens: list[str]) -> None:
    """Every one of TOKENS' sessions is live in the database, and a sample of the tokens is accepted online."""
    assert tokens
    ids = sorted({session_id(token) for token in tokens})
    live = int(stack.sql(
        "SELECT count(*) FROM authentication_sessions WHERE revoked_at IS NULL AND expires_at > now() "
        f"AND id = ANY ('{{{','.join(ids)}}}'::uuid[])"))
    assert live == len(ids), f"{len(ids) - live} of {len(ids)} sessions issued before are gone or revoked"
    sample = tokens[:: max(1, len(tokens) // 100)]
    refused = [(token[-12:], answer.status) for token in sample
               if (answer := stack.request("GET", "/v1/session", token=token)).status != 200]
    assert not refused, f"access tokens refused after the roll: {refused[:10]}"


def running_versions(stack: ReplicatedStack) -> set[str]:
    return {version_of(stack.builds[key] / key[0]).split(" (")[0].split()[-1] for key in stack.processes}


def test_1_the_previous_release_serves(stack, previous_bin):
    version, commit = previous_release()
    for name in SERVICES + ("gateway", "passkey-migrate"):
        assert version_of(previous_bin / name) == f"{name} {version} (commit {commit})"
    assert running_versions(stack) == {version}
    assert stack.request("GET", "/readyz").status == 200


def roll_under_load(stack: ReplicatedStack, bin_dir, issued: list[str], before_roll=lambda: None) -> None:
    """Rolls every process to BIN_DIR's build while passkey sign-ins and a session's refreshes and checks go on,
    after `before_roll` (with the load running); none of them may fail. The sessions issued meanwhile join
    `issued`."""
    sessions = SessionLoad(stack)
    load = SignInLoad(stack)
    time.sleep(2)
    before_roll()
    stack.roll_all(bin_dir)
    time.sleep(2)
    sessions.finish()
    result = load.finish()
    print(f"rolled to {bin_dir}: {result.line}; session calls {sessions.calls}")
    assert result.failures == 0, "\n".join([result.line, *result.failure_lines, stack.log_text()])
    assert not sessions.failures, "\n".join(sessions.failures[:20] + [stack.log_text()])
    assert result.ceremonies > 100, result.line
    assert sessions.calls > 50
    issued.extend(result.tokens + [sessions.access_token])


def test_2_upgrade_under_load(stack, issued):
    version, _ = previous_release()
    assert VERSION != version, "this tree's VERSION is still the previous release's"
    migrated_before = int(stack.sql("SELECT max(version) FROM schema_migrations"))

    def migrate():
        # Sessions exist before the schema changes: the load's first tokens are checked after the upgrade.
        time.sleep(1)
        stack.migrate(BIN)
        assert int(stack.sql("SELECT max(version) FROM schema_migrations")) > migrated_before, "no migration was new"
        time.sleep(2)

    roll_under_load(stack, BIN, issued, before_roll=migrate)
    assert running_versions(stack) == {VERSION}
    assert_still_valid(stack, issued)


def test_3_rollback_under_load(stack, issued, previous_bin):
    version, _ = previous_release()
    roll_under_load(stack, previous_bin, issued)
    assert running_versions(stack) == {version}
    assert_still_valid(stack, issued)
