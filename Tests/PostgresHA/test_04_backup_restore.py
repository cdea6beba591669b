"""The backup and point-in-time restore drill. A writer inserts timestamped rows the whole time, and the services
run under sign-in load (passkey sign-ins, sign-ups and password sign-ins); a full and an incremental backup are taken
under that load; a point in time T is noted and the load goes on; the cluster is destroyed (every process killed,
every data directory deleted) while the services keep running; restore --target-time T brings a new cluster up from
the repository. Every row, session and account acknowledged before T must be there, no row stamped after T, the new
cluster must take writes, and the services, never restarted, must serve from it. Runs last: it replaces the
cluster."""

from __future__ import annotations

import datetime
import math
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import psycopg
import pytest

from conftest import ARCHIVE_TIMEOUT, FIGURES, NODES
from services_load import (ClusterStack, MixedLoad, SignInLoad, acknowledged, lost_writes,
                           make_password_accounts)

# Sign-ins per second from passkey-signin-load during the drill, and the most seconds it may run.
DRILL_RATE = 30
DRILL_LOAD_LIMIT = 300


class Writer(threading.Thread):
    """Inserts a row every ~10 ms through the services' URL and records each acknowledged row with the wall-clock
    time its commit returned."""

    def __init__(self, url: str):
        super().__init__(daemon=True)
        self.url = url
        self.stop = threading.Event()
        self.acknowledged: list[tuple[int, datetime.datetime, float]] = []
        self.errors: list[Exception] = []

    def run(self):
        connection = None
        while not self.stop.is_set():
            try:
                if connection is None:
                    connection = psycopg.connect(self.url, autocommit=True)
                row = connection.execute(
                    "INSERT INTO drill (at) VALUES (clock_timestamp()) RETURNING id, at").fetchone()
                self.acknowledged.append((row[0], row[1], time.time()))
            except psycopg.Error as error:
                self.errors.append(error)
                connection = None
                time.sleep(0.2)
            time.sleep(0.01)
        if connection is not None:
            connection.close()


def running(pid: int) -> bool:
    """Alive and not a zombie."""
    try:
        return "(zombie)" not in (Path("/proc") / str(pid) / "status").read_text()
    except OSError:
        return False


def utc_text(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S+00", time.gmtime(epoch))


@pytest.fixture
def stack(cluster):
    cluster.wait_healthy()
    the_stack = ClusterStack(cluster.url).start()
    yield the_stack
    the_stack.stop()


def test_backup_under_load_and_point_in_time_restore(cluster, stack):
    primary = cluster.wait_healthy()
    with psycopg.connect(cluster.url, autocommit=True) as connection:
        connection.execute("CREATE TABLE drill (id bigserial PRIMARY KEY, at timestamptz NOT NULL)")
    load_directory = Path(tempfile.mkdtemp(prefix="passkey-drill-"))
    mixed = MixedLoad(stack, load_directory, make_password_accounts(stack, 3), 60)
    signins = SignInLoad(stack, load_directory, DRILL_RATE, DRILL_LOAD_LIMIT)
    time.sleep(3)
    mixed.start()
    writer = Writer(cluster.url)
    writer.start()
    try:
        started = time.monotonic()
        full = cluster.run("backup", "--type", "full", timeout=300)
        FIGURES["full backup under write load"] = f"{time.monotonic() - started:.1f} s"
        assert "full backup:" in full.stdout, full.stdout
        started = time.monotonic()
        incremental = cluster.run("backup", "--type", "incr", timeout=300)
        FIGURES["incremental backup under write load"] = f"{time.monotonic() - started:.1f} s"
        assert "incr backup:" in incremental.stdout, incremental.stdout

        # The point in time: a whole second, after the incremental backup ended.
        target = math.ceil(time.time()) + 1
        while time.time() < target + 2:
            time.sleep(0.1)
        lsn_after_target, wal_after_target = cluster.query(
            None, "SELECT pg_current_wal_lsn()::text, pg_walfile_name(pg_current_wal_lsn())", dbname="postgres")[0]
        time.sleep(2)
    finally:
        writer.stop.set()
        writer.join(10)
        signins.stop()
        mixed.stopping.set()
        mixed.join(60)
    outcomes = signins.outcomes(timeout=120) + mixed.records
    # Acknowledged before T: the answer had arrived by then.
    before_target = [outcome for outcome in outcomes if outcome[4] < target]
    assert not writer.errors, writer.errors[:3]
    before = {row_id for row_id, _, acknowledged in writer.acknowledged if acknowledged < target}
    after = {row_id for row_id, at, _ in writer.acknowledged if at.timestamp() > target}
    assert len(before) > 100 and len(after) > 100, (len(before), len(after))

    # The WAL that covers T must be in the repository before the cluster goes: archive_timeout bounds the wait
    # (and is the most a total loss of the cluster costs).
    deadline = time.monotonic() + ARCHIVE_TIMEOUT * 3 + 30
    while True:
        archived = cluster.query(None, "SELECT last_archived_wal FROM pg_stat_archiver", dbname="postgres")[0][0]
        # WAL file names sort by timeline, then position.
        if archived is not None and archived >= wal_after_target:
            break
        assert time.monotonic() < deadline, f"{wal_after_target} ({lsn_after_target}) was not archived"
        time.sleep(0.5)
    FIGURES["WAL holding T + 2 s archived after (archive_timeout " + f"{ARCHIVE_TIMEOUT} s)"] = \
        f"{time.time() - (target + 2):.1f} s"

    # restore destroys nothing unless asked: with the data directories there it refuses, and the cluster is as it
    # was; a target before every backup is refused before anything is stopped, even with --force.
    refused = cluster.run("restore", "--target-time", utc_text(target), check=False, timeout=120)
    assert refused.returncode != 0 and "--force" in refused.stderr, refused.stderr
    too_early = cluster.run("restore", "--target-time", "2000-01-01 00:00:00+00", "--force", check=False,
                            timeout=120)
    assert too_early.returncode != 0 and "no backup" in too_early.stderr, too_early.stderr
    assert cluster.healthy() == primary

    # The disaster: every Patroni and Postgres process killed, every data directory gone. etcd and the
    # repository stay.
    pids = []
    for node in NODES:
        pids += cluster.signal_node(node, signal.SIGKILL, postgres=False)
        pids += cluster.signal_node(node, signal.SIGKILL, patroni=False)
    deadline = time.monotonic() + 10
    while any(running(pid) for pid in pids):
        assert time.monotonic() < deadline, [pid for pid in pids if running(pid)]
        time.sleep(0.1)
    for node in NODES:
        shutil.rmtree(cluster.data_dir(node))
    assert cluster.primaries() == []

    started = time.monotonic()
    restored = cluster.run("restore", "--target-time", utc_text(target), timeout=900)
    restore_seconds = time.monotonic() - started
    FIGURES["restore --target-time (new 3-node cluster, healthy) took"] = f"{restore_seconds:.1f} s"
    assert restored.stdout.strip().splitlines()[-1] == cluster.url

    new_primary = cluster.wait_healthy()
    rows = dict(cluster.query(new_primary, "SELECT id, at FROM drill"))
    missing = before - rows.keys()
    assert not missing, f"{len(missing)} rows acknowledged before T are missing, e.g. {sorted(missing)[:5]}"
    stamped_after = {row_id for row_id, at in rows.items() if at.timestamp() > target}
    assert not stamped_after, f"{len(stamped_after)} rows stamped after T are there, e.g. {sorted(stamped_after)[:5]}"
    assert not (after & rows.keys())
    boundary = len(rows) - len(before)
    FIGURES["restore to T: rows acknowledged before T present"] = f"{len(before)} of {len(before)}"
    FIGURES["restore to T: rows stamped after T present"] = f"0 of {len(after)} (rows in the boundary: {boundary})"

    # The services ran through the loss and the restore without a restart, and serve from the new cluster: every
    # session and account acknowledged before T is there.
    started = time.monotonic()
    while stack.request("GET", "/readyz").status != 200:
        assert time.monotonic() - started < 60, "the services did not serve again:\n" + stack.log_text()
        time.sleep(0.2)
    FIGURES["services ready on the restored cluster after restore returned"] = f"{time.monotonic() - started:.1f} s"
    assert not stack.exited(), stack.log_text()
    counts = acknowledged(before_target)
    lost = lost_writes(stack, before_target)
    assert not any(lost.values()), {kind: (len(items), counts[kind], items[:5]) for kind, items in lost.items()}
    assert counts["sessions"] > 100 and counts["password accounts"] and counts["passkey accounts"], counts
    FIGURES["restore to T: sessions and accounts acknowledged before T present"] = (
        f"{counts['sessions']} sessions, {counts['passkey accounts']} passkey accounts, "
        f"{counts['password accounts']} password accounts: all")
    make_password_accounts(stack, 1)
    assert not stack.exited(), stack.log_text()

    # The restored cluster takes writes through the same URL and replicates them.
    with psycopg.connect(cluster.url, autocommit=True) as connection:
        row_id = connection.execute("INSERT INTO drill (at) VALUES (clock_timestamp()) RETURNING id").fetchone()[0]
    sync = cluster.sync_standby(new_primary)
    deadline = time.monotonic() + 10
    while cluster.query(sync, "SELECT count(*) FROM drill WHERE id = %s", (row_id,)) != [(1,)]:
        assert time.monotonic() < deadline
        time.sleep(0.2)
