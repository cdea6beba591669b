"""The local Postgres HA cluster of deploy/postgres-ha, started once for this suite with its own state directory
and free ports, and torn down (down --purge) at the end.

The tests run in file order and share the cluster: each starts by waiting for a healthy cluster (one primary, two
streaming standbys, one of them synchronous), and the backup/restore drill, which replaces the cluster, runs last.
Figures measured along the way (failover time, restore time, ...) are printed at the end of the run."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
HA_DIR = REPO_ROOT / "deploy" / "postgres-ha"
NODES = (1, 2, 3)
# Port offsets from the base port (deploy/postgres-ha/lib.sh).
PORT_OFFSETS = [0, 1, 2, 10, 11, 12, 20, 21, 22, 23, 24, 25, 30, 31, 32]
# The tests' archive_timeout: the drill waits for the WAL that holds its target time to be archived.
ARCHIVE_TIMEOUT = 10
URL_PATTERN = re.compile(
    r"^postgresql://passkey:[0-9a-f]{32}@127\.0\.0\.1:(\d+),127\.0\.0\.1:(\d+),127\.0\.0\.1:(\d+)/passkey"
    r"\?target_session_attrs=read-write&connect_timeout=2$")

# Figures for the summary at the end: name -> text.
FIGURES: dict[str, str] = {}


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_base_port() -> int:
    """A base port whose whole block of the port scheme is free, away from the default cluster's 5440."""
    start = 26000 + (os.getpid() % 200) * 40
    for base in range(start, 60000, 40):
        if all(port_is_free(base + offset) for offset in PORT_OFFSETS):
            return base
    raise RuntimeError("no free block of ports for the test cluster")


def run_script(name: str, *arguments: str, env: dict, timeout: float = 300, check: bool = True):
    result = subprocess.run([str(HA_DIR / name), *arguments], env=env, capture_output=True, text=True,
                            timeout=timeout, stdin=subprocess.DEVNULL)
    if check and result.returncode != 0:
        raise AssertionError(f"{name} {' '.join(arguments)} exited {result.returncode}:\n{result.stderr}\n"
                             f"{result.stdout}")
    return result


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def parent_of(pid: int) -> int | None:
    try:
        return int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def command_of(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@dataclass
class Cluster:
    state_dir: Path
    base: int
    env: dict
    url: str = ""
    secrets: dict = field(default_factory=dict)

    # --- layout -------------------------------------------------------------------------------------------------

    def pg_port(self, node: int) -> int:
        return self.base + node - 1

    def rest_port(self, node: int) -> int:
        return self.base + 10 + node - 1

    def etcd_pidfile(self, member: int) -> Path:
        return self.state_dir / "run" / f"etcd{member}.pid"

    @property
    def haproxy_rw_port(self) -> int:
        return self.base + 30

    def data_dir(self, node: int) -> Path:
        return self.state_dir / f"node{node}" / "data"

    def patroni_config(self, node: int = 1) -> Path:
        return self.state_dir / f"node{node}" / "patroni.yml"

    def patroni_pid(self, node: int) -> int:
        return int((self.state_dir / f"node{node}" / "patroni.pid").read_text())

    def postmaster_pid(self, node: int) -> int:
        return int((self.data_dir(node) / "postmaster.pid").read_text().split()[0])

    def postgres_pids(self, node: int) -> list[int]:
        """The postmaster and every process it has forked."""
        postmaster = self.postmaster_pid(node)
        return [postmaster, *children_of(postmaster)]

    # --- scripts ------------------------------------------------------------------------------------------------

    def run(self, name: str, *arguments: str, timeout: float = 300, check: bool = True):
        return run_script(name, *arguments, env=self.env, timeout=timeout, check=check)

    # --- SQL ----------------------------------------------------------------------------------------------------

    def connect(self, node: int | None = None, dbname: str = "passkey", timeout: int = 2) -> psycopg.Connection:
        """A superuser connection to one node, or with node None to the primary through the multi-host URL."""
        if node is None:
            hosts = ",".join(f"127.0.0.1:{self.pg_port(n)}" for n in NODES)
            dsn = (f"postgresql://postgres:{self.secrets['PG_HA_SUPERUSER_PASSWORD']}@{hosts}/{dbname}"
                   f"?target_session_attrs=read-write&connect_timeout={timeout}")
            return psycopg.connect(dsn, autocommit=True)
        return psycopg.connect(host="127.0.0.1", port=self.pg_port(node), user="postgres", dbname=dbname,
                               password=self.secrets["PG_HA_SUPERUSER_PASSWORD"], connect_timeout=timeout,
                               autocommit=True)

    def query(self, node: int | None, sql: str, params=(), dbname: str = "passkey", timeout: int = 2):
        with self.connect(node, dbname, timeout) as connection:
            return connection.execute(sql, params).fetchall()

    def in_recovery(self, node: int) -> bool | None:
        """pg_is_in_recovery() on the node, or None when it does not answer."""
        try:
            return self.query(node, "SELECT pg_is_in_recovery()", dbname="postgres")[0][0]
        except psycopg.Error:
            return None

    def primaries(self, excluding: int | None = None) -> list[int]:
        """Every node that answers as a primary (out of recovery), leaving out EXCLUDING (a frozen node would hold
        each poll for the whole connect timeout)."""
        return [node for node in NODES if node != excluding and self.in_recovery(node) is False]

    def rest(self, node: int, path: str, timeout: float = 2) -> tuple[int | None, dict | None]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.rest_port(node)}{path}", timeout=timeout) as answer:
                return answer.status, json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as error:
            body = error.read()
            try:
                return error.code, json.loads(body or b"null")
            except ValueError:
                return error.code, None
        except (OSError, ValueError):
            return None, None

    def replication(self, primary: int) -> dict[str, tuple[str, str]]:
        """pg_stat_replication on the primary: application_name (the node's name) -> (state, sync_state)."""
        rows = self.query(primary, "SELECT application_name, state, sync_state FROM pg_stat_replication",
                          dbname="postgres")
        return {name: (state, sync_state) for name, state, sync_state in rows}

    def healthy(self) -> int | None:
        """The primary's node number when there is exactly one primary, both standbys stream from it and one of
        them is synchronous; otherwise None."""
        primaries = self.primaries()
        if len(primaries) != 1:
            return None
        try:
            replication = self.replication(primaries[0])
        except psycopg.Error:
            return None
        states = sorted(replication.values())
        if [state for state, _ in states] != ["streaming", "streaming"]:
            return None
        if sorted(sync for _, sync in states) != ["async", "sync"]:
            return None
        # Patroni has recorded the same synchronous standby in etcd (what failover and switchover go by).
        _, topology = self.rest(primaries[0], "/cluster")
        sync_members = [member["name"] for member in (topology or {}).get("members", [])
                        if member.get("role") == "sync_standby"]
        if sync_members != [name for name, (_, sync) in replication.items() if sync == "sync"]:
            return None
        return primaries[0]

    def wait_healthy(self, timeout: float = 120) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            primary = self.healthy()
            if primary is not None:
                return primary
            time.sleep(0.5)
        listing = subprocess.run(["patronictl", "-c", str(self.patroni_config()), "list"], capture_output=True,
                                 text=True, timeout=30)
        raise AssertionError(f"the cluster is not healthy after {timeout}s:\n{listing.stdout}{listing.stderr}")

    def sync_standby(self, primary: int) -> int:
        names = [name for name, (_, sync) in self.replication(primary).items() if sync == "sync"]
        assert len(names) == 1, names
        return int(names[0].removeprefix("node"))

    def wait_settled_without(self, frozen: int, primary: int, timeout: float = 60) -> float:
        """Until `primary` has the other live node as its synchronous standby (in Postgres), the cluster formed
        again without the frozen node; returns the seconds it took."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            try:
                standbys = [int(name.removeprefix("node")) for name, (state, sync) in self.replication(primary).items()
                            if state == "streaming" and sync == "sync"]
            except psycopg.Error:
                standbys = []
            if standbys and frozen not in standbys:
                return time.monotonic() - started
            time.sleep(0.2)
        raise AssertionError(f"node{primary} has no synchronous standby {timeout}s after the failover")

    def resume(self, pids: list[int]):
        """SIGCONT to PIDS and to any runuser above them: runuser stops itself when its child is stopped (as su
        does, for job control) and would otherwise stay stopped, never reaping Patroni when it exits."""
        for pid in pids:
            for target in (pid, parent_of(pid)):
                if target and (target == pid or command_of(target).startswith("runuser")):
                    try:
                        os.kill(target, signal.SIGCONT)
                    except ProcessLookupError:
                        pass

    def signal_node(self, node: int, number: int, patroni: bool = True, postgres: bool = True):
        pids = ([self.patroni_pid(node)] if patroni else []) + (self.postgres_pids(node) if postgres else [])
        for pid in pids:
            try:
                os.kill(pid, number)
            except ProcessLookupError:
                pass
        return pids


@pytest.fixture(scope="session")
def cluster():
    for tool in ("patronictl", "etcdctl"):
        if shutil.which(tool) is None and not (HA_DIR / "up").exists():
            pytest.fail(f"{tool} missing")
    state_dir = Path(tempfile.mkdtemp(prefix="pgha-", dir="/tmp"))
    base = free_base_port()
    env = {**os.environ, "PG_HA_DIR": str(state_dir), "PG_HA_BASE_PORT": str(base),
           "PG_HA_ARCHIVE_TIMEOUT": str(ARCHIVE_TIMEOUT)}
    started = time.monotonic()
    the_cluster = Cluster(state_dir=state_dir, base=base, env=env)
    try:
        result = run_script("up", "--haproxy", env=env, timeout=600)
        FIGURES["up (three etcd members, three nodes, stanza, HAProxy)"] = f"{time.monotonic() - started:.1f} s"
        the_cluster.url = result.stdout.strip().splitlines()[-1]
        for line in (state_dir / "secrets.env").read_text().splitlines():
            if "=" in line and not line.startswith("#"):
                key, _, value = line.partition("=")
                the_cluster.secrets[key] = value
        yield the_cluster
    finally:
        # Nothing may be left stopped: a SIGSTOPped process would not act on down's SIGTERM.
        for path in state_dir.glob("**/*.pid"):
            try:
                the_cluster.resume([int(path.read_text().split()[0])])
            except (OSError, ValueError):
                pass
        if os.environ.get("PG_HA_KEEP") == "1":
            # For a look at the nodes' logs after a failure: stopped, not purged.
            run_script("down", env=env, timeout=300, check=False)
        else:
            run_script("down", "--purge", env=env, timeout=300, check=False)
            shutil.rmtree(state_dir, ignore_errors=True)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not FIGURES:
        return
    terminalreporter.write_sep("-", "Postgres HA figures")
    for name, value in FIGURES.items():
        terminalreporter.write_line(f"{name}: {value}")
