"""Upgrades from the previous release, tested under load: its build (deploy/upgrade/build-previous, from the clone's
history) serving two replicas of every service and two gateways behind HAProxy, the new migrations applied while it
serves, then every process rolled to this build one replica at a time, and back again.

The stack here is processes, not containers, so that the previous release needs no image build: each replica is one
process on ports of its own, the gateways reach the service replicas through their comma-separated
`*_SERVICE_ADDRESSES` (numeric: a draining replica's GOAWAY sends its calls to the other), and HAProxy stands where
a Kubernetes Service or a load balancer stands in front of the gateways. A gateway leaves HAProxy's rotation
(`state maint` on HAProxy's admin socket, as a terminating pod leaves its Service's endpoints during its `preStop`
sleep) before it gets SIGTERM."""

from __future__ import annotations

import base64
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "Support" / "python"))
from passkey_stack import (  # noqa: E402
    BIN, ROOT, Response, base_environment, call, database_url, free_port, make_certificates, stop_all, tls_environment, wait_for_port)

PREVIOUS_RELEASE = ROOT / "deploy" / "upgrade" / "previous-release"
BUILD_PREVIOUS = ROOT / "deploy" / "upgrade" / "build-previous"
SERVICES = ("challenge-service", "verification-service", "session-service")
REPLICAS = (1, 2)
RPC_COUNT = re.compile(r"^rpc_server_duration_seconds_count\{[^}]*\} ([0-9.e+]+)$", re.M)


def previous_release() -> tuple[str, str]:
    """(version, commit) of the previous release, as deploy/upgrade/previous-release names it."""
    line = next(line for line in PREVIOUS_RELEASE.read_text().splitlines() if line.strip() and not line.startswith("#"))
    version, commit = line.split()
    return version, commit


@pytest.fixture(scope="session")
def previous_bin() -> pathlib.Path:
    """The previous release's executables, built from this clone's history (reused when already built)."""
    built = subprocess.run([str(BUILD_PREVIOUS)], capture_output=True, text=True, timeout=3600)
    assert built.returncode == 0, built.stderr[-4000:]
    return pathlib.Path(built.stdout.strip().splitlines()[-1])


def version_of(executable: pathlib.Path) -> str:
    return subprocess.run([str(executable), "--version"], capture_output=True, text=True, timeout=10).stdout.strip()


def get(url: str, timeout: float = 1) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


def rpc_count(port: int) -> int:
    """The RPCs a service replica has served, from its /metrics (0 while they do not answer)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as response:
            text = response.read().decode()
    except OSError:
        return 0
    return int(sum(float(value) for value in RPC_COUNT.findall(text)))


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.05)


class HAProxy:
    """HAProxy in front of the gateways: HTTP/1.1 keep-alive to clients, a new connection to a gateway per request
    (so a gateway taken out of rotation gets no more requests), health checks on /readyz, and a retry on another
    gateway when a connection cannot be made."""

    def __init__(self, directory: pathlib.Path, port: int, gateways: dict[int, int]):
        self.socket_path = directory / "haproxy.sock"
        self.config = directory / "haproxy.cfg"
        servers = "\n".join(
            f"    server gateway{n} 127.0.0.1:{port_} check inter 300ms fall 2 rise 1" for n, port_ in gateways.items())
        self.config.write_text(f"""global
    stats socket {self.socket_path} level admin
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    retries 3
    option redispatch
    option http-server-close
frontend passkey
    bind 127.0.0.1:{port}
    default_backend gateways
backend gateways
    balance roundrobin
    option httpchk GET /readyz
{servers}
""")
        haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
        self.log = open(directory / "haproxy.log", "wb")
        self.process = subprocess.Popen([haproxy, "-db", "-f", str(self.config)], stdout=self.log, stderr=self.log)
        wait_for_port(port)

    def command(self, line: str) -> str:
        with socket.socket(socket.AF_UNIX) as connection:
            connection.connect(str(self.socket_path))
            connection.sendall(line.encode() + b"\n")
            answer = b""
            while chunk := connection.recv(65536):
                answer += chunk
        return answer.decode()

    def server_state(self, n: int) -> str:
        """gateway N's status in HAProxy's stats (UP, DOWN, MAINT...)."""
        for row in self.command("show stat").splitlines():
            fields = row.split(",")
            if len(fields) > 17 and fields[0] == "gateways" and fields[1] == f"gateway{n}":
                return fields[17]
        return "?"

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


class ReplicatedStack:
    """Two replicas of every service and two gateways, each a process of a chosen build, on one database, with
    mutual TLS between them and HAProxy in front. `roll(name, n, bin)` replaces one replica with another build's."""

    def __init__(self, bin_dir: pathlib.Path):
        self.server_url = os.environ["DATABASE_URL"]
        self.database = "upgrade_" + uuid.uuid4().hex
        self.url = database_url(self.server_url, self.database)
        self.logs = pathlib.Path(tempfile.mkdtemp(prefix="passkey-upgrade-"))
        self.certificates = make_certificates(self.logs / "tls")
        self.key_encryption_key = self.logs / "token-kek"
        self.key_encryption_key.write_text(os.urandom(32).hex() + "\n")
        self.key_encryption_key.chmod(0o600)
        self.grpc_ports = {(name, n): free_port() for name in SERVICES for n in REPLICAS}
        self.metrics_ports = {(name, n): free_port() for name in SERVICES for n in REPLICAS}
        self.gateway_ports = {n: free_port() for n in REPLICAS}
        self.port = free_port()
        self.processes: dict[tuple[str, int], subprocess.Popen] = {}
        self.builds: dict[tuple[str, int], pathlib.Path] = {}
        subprocess.run(["psql", self.server_url, "-qc", f"CREATE DATABASE {self.database}"], check=True)
        self.migrate(bin_dir)
        for name in SERVICES:
            for n in REPLICAS:
                self.start(name, n, bin_dir)
        for n in REPLICAS:
            self.start("gateway", n, bin_dir)
        self.haproxy = HAProxy(self.logs, self.port, self.gateway_ports)
        wait_until(lambda: all(self.haproxy.server_state(n) == "UP" for n in REPLICAS), 30, "HAProxy sees the gateways")

    @property
    def origin(self) -> str:
        return f"http://localhost:{self.port}"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def environment(self, name: str, n: int) -> dict[str, str]:
        env = base_environment(self.url, self.origin, self.key_encryption_key)
        for service in SERVICES:
            prefix = service.split("-")[0].upper()
            env[f"{prefix}_SERVICE_ADDRESSES"] = ",".join(
                f"127.0.0.1:{self.grpc_ports[(service, m)]}" for m in REPLICAS)
        if name == "gateway":
            env["GATEWAY_LISTEN"] = f"127.0.0.1:{self.gateway_ports[n]}"
        elif name != "passkey-migrate":
            prefix = name.split("-")[0].upper()
            env[f"{prefix}_SERVICE_LISTEN"] = f"127.0.0.1:{self.grpc_ports[(name, n)]}"
            env["METRICS_LISTEN"] = f"127.0.0.1:{self.metrics_ports[(name, n)]}"
        env.update(tls_environment(self.certificates, name))
        return env

    def migrate(self, bin_dir: pathlib.Path) -> str:
        done = subprocess.run([str(bin_dir / "passkey-migrate")], env=self.environment("passkey-migrate", 0),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout + done.stderr

    def start(self, name: str, n: int, bin_dir: pathlib.Path) -> None:
        """Starts replica N of NAME from BIN_DIR and waits until it is ready (a service's /healthz, a gateway's
        /readyz)."""
        log = open(self.logs / f"{name}-{n}.log", "ab")
        log.write(f"--- {version_of(bin_dir / name)}\n".encode())
        log.flush()
        self.processes[(name, n)] = subprocess.Popen(
            [str(bin_dir / name)], env=self.environment(name, n), stdout=log, stderr=log)
        self.builds[(name, n)] = bin_dir
        if name == "gateway":
            ready = f"http://127.0.0.1:{self.gateway_ports[n]}/readyz"
        else:
            ready = f"http://127.0.0.1:{self.metrics_ports[(name, n)]}/healthz"
        wait_until(lambda: get(ready) == 200 or self.processes[(name, n)].poll() is not None, 60, f"{name} {n} ready")
        assert self.processes[(name, n)].poll() is None, f"{name} {n} exited:\n{self.log_text()}"

    def stop(self, name: str, n: int) -> int:
        """SIGTERM to replica N of NAME (it drains: NOT_SERVING, GOAWAY, its calls finished); its exit status."""
        process = self.processes.pop((name, n))
        process.send_signal(signal.SIGTERM)
        return process.wait(timeout=60)

    def roll(self, name: str, n: int, bin_dir: pathlib.Path) -> None:
        """Replaces replica N of NAME with BIN_DIR's build, as a rolling update does: out of rotation, drained and
        stopped, the new one started and ready, and (a service) serving calls before the next replica is touched."""
        if name == "gateway":
            self.haproxy.command(f"set server gateways/gateway{n} state maint")
            time.sleep(0.5)
        status = self.stop(name, n)
        assert status == 0, f"{name} {n} exited {status} after SIGTERM:\n{self.log_text()}"
        self.start(name, n, bin_dir)
        if name == "gateway":
            self.haproxy.command(f"set server gateways/gateway{n} state ready")
            wait_until(lambda: self.haproxy.server_state(n) == "UP", 10, f"HAProxy takes gateway {n} back")
        else:
            port = self.metrics_ports[(name, n)]
            wait_until(lambda: rpc_count(port) > 0, 15, f"{name} {n} serves its first call")

    def roll_all(self, bin_dir: pathlib.Path) -> None:
        for name in SERVICES + ("gateway",):
            for n in REPLICAS:
                self.roll(name, n, bin_dir)

    def request(self, method: str, path: str, body=None, token: str | None = None) -> Response:
        return call(self.base_url, method, path, body=body, token=token)

    def sql(self, statement: str) -> str:
        return subprocess.run(["psql", self.url, "-Atqc", statement], check=True, capture_output=True,
                              text=True).stdout.strip()

    def log_text(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-6000:]}" for p in sorted(self.logs.glob("*.log")))

    def close(self) -> None:
        self.haproxy.stop()
        stop_all(self.processes.values())
        subprocess.run(["psql", self.server_url, "-qc", f"DROP DATABASE IF EXISTS {self.database} WITH (FORCE)"])


@dataclass
class LoadResult:
    ceremonies: int
    failures: int
    line: str
    failure_lines: list[str]
    tokens: list[str]


class SignInLoad:
    """passkey-signin-load (this build's) at a fixed rate through HAProxy, recording every ceremony."""

    def __init__(self, stack: ReplicatedStack, rate: int = 50):
        self.record = stack.logs / f"signins-{uuid.uuid4().hex[:8]}.txt"
        self.process = subprocess.Popen(
            [str(BIN / "passkey-signin-load"), "--url", stack.base_url, "--origin", stack.origin, "--rp-id",
             "localhost", "--synced", "--connections", "8", "--duration", "3600", "--rate", str(rate),
             "--record", str(self.record), "--report-failures", "--progress"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.started = threading.Event()
        self.errors: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        if not self.started.wait(60):
            self.process.kill()
            raise AssertionError("the load generator did not start:\n" + "\n".join(self.errors))

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            if line.startswith("progress "):
                self.started.set()
            else:
                self.errors.append(line.rstrip())

    def finish(self) -> LoadResult:
        self.process.send_signal(signal.SIGTERM)
        output, _ = self.process.communicate(timeout=120)
        self.reader.join(5)
        lines = output.splitlines()
        summary = next((line for line in lines if line.startswith("mode=")), None)
        assert summary, f"the load generator exited {self.process.returncode} without results:\n{output}"
        values = dict(part.split("=", 1) for part in summary.split())
        tokens = []
        for line in self.record.read_text().splitlines():
            parts = line.split()
            if parts[2] == "ok":
                tokens.append(parts[4])
        return LoadResult(int(values["ceremonies"]), int(values["failures"]), summary,
                          [line for line in lines if line.startswith("failure ")], tokens)


@dataclass
class SessionLoad:
    """A session kept in use while the processes roll: a password account's session refreshed (a new refresh token
    each time) and checked online (`GET /v1/session`, which reaches session-service), in a loop; every answer that
    is not 200 is a failure."""

    stack: ReplicatedStack
    calls: int = 0
    failures: list[str] = field(default_factory=list)

    def __post_init__(self):
        email = f"upgrade-{uuid.uuid4().hex[:12]}@example.com"
        created = self.stack.request(
            "POST", "/v1/accounts/password", {"email": email, "password": "correct horse battery", "displayName": "U"})
        assert created.status == 201, created.body
        signed_in = self.stack.request(
            "POST", "/v1/sessions/password", {"email": email, "password": "correct horse battery"})
        assert signed_in.status == 200, signed_in.body
        self.refresh_token = signed_in.json()["refreshToken"]
        self.access_token = signed_in.json()["accessToken"]
        self.running = threading.Event()
        self.running.set()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while self.running.is_set():
            refreshed = self.stack.request("POST", "/v1/session/refresh", {"refreshToken": self.refresh_token})
            self.calls += 1
            if refreshed.status != 200:
                self.failures.append(f"refresh {refreshed.status} {refreshed.body[:200]!r}")
                time.sleep(0.2)
                continue
            self.refresh_token = refreshed.json()["refreshToken"]
            self.access_token = refreshed.json()["accessToken"]
            checked = self.stack.request("GET", "/v1/session", token=self.access_token)
            self.calls += 1
            if checked.status != 200:
                self.failures.append(f"session {checked.status} {checked.body[:200]!r}")
            time.sleep(0.05)

    def finish(self) -> None:
        self.running.clear()
        self.thread.join(30)


def session_id(access_token: str) -> str:
    """The `sid` claim of an access token (its payload read, not verified: the gateway verifies it)."""
    payload = access_token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["sid"]
