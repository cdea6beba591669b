"""One primary, synchronous replication, and what up prints."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import psycopg
import pytest

from conftest import HA_DIR, NODES, URL_PATTERN


def test_up_prints_the_multi_host_url_alone_on_its_last_line(cluster):
    match = URL_PATTERN.match(cluster.url)
    assert match, cluster.url
    assert [int(port) for port in match.groups()] == [cluster.pg_port(node) for node in NODES]
    # The URL is the services' own: the passkey role, in the passkey database, on the primary.
    with psycopg.connect(cluster.url, autocommit=True) as connection:
        user, database, in_recovery = connection.execute(
            "SELECT current_user, current_database(), pg_is_in_recovery()").fetchone()
    assert (user, database, in_recovery) == ("passkey", "passkey", False)


def test_up_again_starts_nothing_and_prints_the_same_url(cluster):
    primary = cluster.wait_healthy()
    pids = {node: cluster.patroni_pid(node) for node in NODES}
    result = cluster.run("up", timeout=120)
    assert result.stdout.strip().splitlines()[-1] == cluster.url
    assert {node: cluster.patroni_pid(node) for node in NODES} == pids
    assert cluster.healthy() == primary


def test_exactly_one_primary_and_patroni_agrees(cluster):
    primary = cluster.wait_healthy()
    assert cluster.primaries() == [primary]
    for node in NODES:
        status, _ = cluster.rest(node, "/primary")
        assert (status == 200) == (node == primary), (node, status)
        if node != primary:
            assert cluster.in_recovery(node) is True
            status, _ = cluster.rest(node, "/replica")
            assert status == 200, node
    # One synchronous standby; the settings that make a commit wait for it.
    assert cluster.query(primary, "SHOW synchronous_commit", dbname="postgres") == [("on",)]
    standby_names = cluster.query(primary, "SHOW synchronous_standby_names", dbname="postgres")[0][0]
    assert standby_names.strip('"') == f"node{cluster.sync_standby(primary)}"
    _, config = cluster.rest(primary, "/config")
    assert config["synchronous_mode"] is True and config["synchronous_mode_strict"] is False
    assert config["postgresql"]["use_pg_rewind"] is True


def test_writes_replicate_to_both_standbys(cluster):
    primary = cluster.wait_healthy()
    with psycopg.connect(cluster.url, autocommit=True) as connection:
        connection.execute("CREATE TABLE IF NOT EXISTS replicated (id bigint PRIMARY KEY, note text)")
        connection.execute("INSERT INTO replicated VALUES (1, 'replicates')")
    for node in NODES:
        if node == primary:
            continue
        deadline = time.monotonic() + 10
        while cluster.query(node, "SELECT note FROM replicated WHERE id = 1") != [("replicates",)]:
            assert time.monotonic() < deadline, f"the row did not reach node{node}"
            time.sleep(0.1)


def walreceiver_pid(cluster, node: int) -> int:
    pid = cluster.query(node, "SELECT pid FROM pg_stat_wal_receiver", dbname="postgres")
    assert pid, f"node{node} has no WAL receiver"
    return pid[0][0]


def test_a_commit_waits_for_the_synchronous_standby(cluster):
    """With the sync standby's WAL receiver stopped the commit does not return (it waits in SyncRep); once the
    receiver runs again it returns, and the row is on the sync standby."""
    primary = cluster.wait_healthy()
    sync = cluster.sync_standby(primary)
    with psycopg.connect(cluster.url, autocommit=True) as connection:
        connection.execute("CREATE TABLE IF NOT EXISTS replicated (id bigint PRIMARY KEY, note text)")
    receiver = walreceiver_pid(cluster, sync)
    outcome: dict = {}

    def commit():
        try:
            with psycopg.connect(cluster.url, autocommit=True) as connection:
                outcome["backend"] = connection.info.backend_pid
                connection.execute("INSERT INTO replicated VALUES (2, 'waits for the sync standby')")
                outcome["committed_at"] = time.monotonic()
        except psycopg.Error as error:
            outcome["error"] = error

    os.kill(receiver, signal.SIGSTOP)
    try:
        writer = threading.Thread(target=commit)
        writer.start()
        writer.join(3)
        assert writer.is_alive() and "committed_at" not in outcome, outcome
        waits = cluster.query(primary, "SELECT wait_event FROM pg_stat_activity WHERE pid = %s",
                              (outcome["backend"],), dbname="postgres")
        assert waits == [("SyncRep",)], waits
    finally:
        os.kill(receiver, signal.SIGCONT)
    resumed = time.monotonic()
    writer.join(10)
    assert "committed_at" in outcome, outcome
    assert outcome["committed_at"] - resumed < 5
    deadline = time.monotonic() + 5
    while cluster.query(sync, "SELECT note FROM replicated WHERE id = 2") != [("waits for the sync standby",)]:
        assert time.monotonic() < deadline, "the committed row is not on the synchronous standby"
        time.sleep(0.05)


def test_the_passkey_role_cannot_write_on_a_standby(cluster):
    primary = cluster.wait_healthy()
    standby = next(node for node in NODES if node != primary)
    password = cluster.secrets["PG_HA_PASSKEY_PASSWORD"]
    with psycopg.connect(host="127.0.0.1", port=cluster.pg_port(standby), user="passkey", password=password,
                         dbname="passkey", autocommit=True, connect_timeout=2) as connection:
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction) as refused:
            connection.execute("INSERT INTO replicated VALUES (3, 'refused')")
    assert refused.value.sqlstate == "25006"


def test_the_committed_haproxy_cfg_is_what_up_generates_for_the_default_ports(tmp_path):
    """deploy/postgres-ha/haproxy.cfg documents the HAProxy alternative; up --haproxy writes the same from lib.sh
    for its own ports, so the two cannot drift apart. HAProxy itself accepts the file."""
    committed = HA_DIR / "haproxy.cfg"
    generated = subprocess.run(
        ["bash", "-c", f"source {HA_DIR / 'lib.sh'} && haproxy_config"], capture_output=True, text=True, timeout=60,
        env={**os.environ, "PG_HA_DIR": str(tmp_path / "state"), "PG_HA_BASE_PORT": "5440"})
    assert generated.returncode == 0, generated.stderr
    assert generated.stdout == committed.read_text()
    checked = subprocess.run(["haproxy", "-c", "-q", "-f", str(committed)], capture_output=True, text=True,
                             timeout=60)
    assert checked.returncode == 0, checked.stderr
