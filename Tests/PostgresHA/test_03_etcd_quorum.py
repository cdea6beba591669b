"""etcd losing quorum (two of its three members stopped). Patroni cannot renew the leader key, so after the TTL the
primary demotes itself to a read-only standby (failsafe_mode is off), and no node can take the key either: for the
whole outage there is never more than one primary, and at its end none. Bringing the members back (up again) gives
one primary with every row."""

from __future__ import annotations

import os
import signal
import time

import psycopg
import pytest

from conftest import FIGURES, NODES

# ttl 6 + retry_timeout 2.5 + loop_wait 1, with room for a slow machine.
DEMOTION_DEADLINE = 40


def stop_etcd_member(cluster, member: int):
    pid = int(cluster.etcd_pidfile(member).read_text())
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        assert time.monotonic() < deadline, f"etcd{member} does not stop"
        time.sleep(0.1)


def test_etcd_quorum_loss_demotes_the_primary_and_never_makes_two(cluster):
    primary = cluster.wait_healthy()
    with psycopg.connect(cluster.url, autocommit=True) as connection:
        connection.execute("CREATE TABLE IF NOT EXISTS markers (id bigserial PRIMARY KEY, note text NOT NULL)")
        marker = connection.execute(
            "INSERT INTO markers (note) VALUES ('before etcd lost quorum') RETURNING id").fetchone()[0]

    for member in (2, 3):
        stop_etcd_member(cluster, member)
    lost = time.monotonic()

    demoted_after = None
    while time.monotonic() - lost < DEMOTION_DEADLINE:
        primaries = cluster.primaries()
        assert len(primaries) <= 1, f"two primaries while etcd has no quorum: {primaries}"
        assert set(primaries) <= {primary}, f"node{primaries} was promoted without etcd"
        if not primaries and all(cluster.in_recovery(node) is True for node in NODES):
            demoted_after = time.monotonic() - lost
            break
        time.sleep(0.5)
    assert demoted_after is not None, f"node{primary} is still a primary {DEMOTION_DEADLINE}s after etcd lost quorum"
    FIGURES["etcd quorum lost: primary demoted to read-only after"] = f"{demoted_after:.1f} s"

    # It stays that way while etcd is down: nobody promotes, and the old primary refuses writes.
    calm_until = time.monotonic() + 6
    while time.monotonic() < calm_until:
        assert cluster.primaries() == []
        time.sleep(0.5)
    with cluster.connect(primary) as connection:
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction) as refused:
            connection.execute("INSERT INTO markers (note) VALUES ('without etcd')")
    assert refused.value.sqlstate == "25006"
    # The services' URL finds no primary at all (target_session_attrs=read-write).
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(cluster.url, autocommit=True).close()

    # up starts the stopped members again (and nothing else), then waits for a healthy cluster.
    restarted = time.monotonic()
    result = cluster.run("up", timeout=300)
    assert result.stdout.strip().splitlines()[-1] == cluster.url
    new_primary = cluster.wait_healthy()
    FIGURES["etcd quorum back (up): healthy again after"] = f"{time.monotonic() - restarted:.1f} s"
    assert cluster.primaries() == [new_primary]
    assert cluster.query(new_primary, "SELECT note FROM markers WHERE id = %s", (marker,)) == \
        [("before etcd lost quorum",)]
    with psycopg.connect(cluster.url, autocommit=True) as connection:
        connection.execute("INSERT INTO markers (note) VALUES ('after etcd came back')")
