"""The container stack for the rolling-change tests: images built from the committed tree, a stack of its own
(deploy/containers/up under a PASSKEY_STACK_NAME of this run, on free ports) that is always removed at the end, the
replica helpers of deploy/containers/lib.sh, the services' metrics, and passkey-signin-load in the background."""

from __future__ import annotations

import os
import random
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTAINERS_DIR = REPO_ROOT / "deploy" / "containers"
LOAD_GENERATOR = REPO_ROOT / ".build" / "images" / "scratch" / "release" / "passkey-signin-load"

# A stack of this run's own (name, network, volume, ports), so that runs from other checkouts, or a stack someone
# brought up with deploy/containers/up, are not touched: the process ID names it.
STACK_PREFIX = "passkey-rollout-"
STACK_NAME = os.environ.get("PASSKEY_ROLLOUT_STACK_NAME", f"{STACK_PREFIX}{os.getpid()}")
# The label lib.sh gives every container of that stack.
STACK_LABEL = "passkey.stack=" + ("containers" if STACK_NAME == "passkey" else STACK_NAME)
# Loopback ports: the gateway's, and the metrics ports lib.sh derives from the base (base+1 to base+29).
METRICS_PORT_SPAN = range(1, 30)
GATEWAY_PORT_OFFSET = 80
# The load: a fixed rate that leaves the two cores headroom for the stack's rolling changes.
LOAD_RATE = int(os.environ.get("PASSKEY_ROLLOUT_RATE", "150"))
LOAD_CONNECTIONS = int(os.environ.get("PASSKEY_ROLLOUT_CONNECTIONS", "16"))

RPC_COUNT = re.compile(r"^rpc_server_duration_seconds_count\{[^}]*\}\s+([0-9.eE+]+)\s*$", re.MULTILINE)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def ephemeral_ports_start() -> int:
    """The first port of the kernel's ephemeral range (32768 by default)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def choose_ports() -> tuple[int, int]:
    """(gateway port, metrics port base): PASSKEY_ROLLOUT_GATEWAY_PORT and PASSKEY_ROLLOUT_METRICS_PORT_BASE when
    set, else a block of 100 ports from 20000 up, below the kernel's ephemeral range (an outgoing connection may
    take a port in it at any moment, and a replica started later could then not publish it), whose ports in use
    here are all free."""
    if "PASSKEY_ROLLOUT_METRICS_PORT_BASE" in os.environ:
        base = int(os.environ["PASSKEY_ROLLOUT_METRICS_PORT_BASE"])
        return int(os.environ.get("PASSKEY_ROLLOUT_GATEWAY_PORT", base + GATEWAY_PORT_OFFSET)), base
    blocks = list(range(20000, ephemeral_ports_start() - 100, 100))
    random.shuffle(blocks)
    for base in blocks:
        if all(port_free(base + offset) for offset in [*METRICS_PORT_SPAN, GATEWAY_PORT_OFFSET]):
            return base + GATEWAY_PORT_OFFSET, base
    raise RuntimeError("no free block of loopback ports for the stack")


def remove_abandoned_stacks(environment: dict[str, str]) -> None:
    """Stacks of earlier runs whose process is gone (killed before its teardown ran)."""
    result = subprocess.run(
        ["podman", "--runtime", "runc", "ps", "-a", "--format", '{{index .Labels "passkey.stack"}}'],
        capture_output=True, text=True, timeout=60)
    for name in sorted(set(result.stdout.split())):
        owner = name.removeprefix(STACK_PREFIX)
        if name == STACK_NAME or not name.startswith(STACK_PREFIX) or not owner.isdigit():
            continue
        try:
            os.kill(int(owner), 0)
            continue
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        log(f"removing the stack {name} of an earlier run")
        subprocess.run(
            [str(CONTAINERS_DIR / "down"), "--volumes"], env={**environment, "PASSKEY_STACK_NAME": name},
            timeout=300)


class Stack:
    """deploy/containers/lib.sh's functions, run against this test's stack."""

    def __init__(self, extra_env_file: Path, gateway_port: int, metrics_port_base: int):
        self.environment = dict(os.environ)
        self.environment.update(
            PASSKEY_STACK_NAME=STACK_NAME,
            PASSKEY_GATEWAY_PORT=str(gateway_port),
            PASSKEY_METRICS_PORT_BASE=str(metrics_port_base),
            PASSKEY_VERIFICATION_REPLICAS="3",
            PASSKEY_EXTRA_ENV_FILE=str(extra_env_file),
        )
        self.environment.pop("PASSKEY_ENV_FILE", None)
        self.gateway_url = f"http://127.0.0.1:{gateway_port}"
        self.origin = f"http://localhost:{gateway_port}"

    def script(self, name: str, *arguments: str, timeout: float = 300) -> None:
        """Runs deploy/containers/NAME; its output goes to this test's output."""
        subprocess.run([str(CONTAINERS_DIR / name), *arguments], env=self.environment, check=True, timeout=timeout)

    def lib(self, command: str, timeout: float = 120) -> str:
        """Runs COMMAND (bash, with lib.sh sourced) and returns its standard output; fails on a non-zero exit with
        what it printed."""
        script = f"set -euo pipefail; source {shlex.quote(str(CONTAINERS_DIR / 'lib.sh'))}; {command}"
        result = subprocess.run(
            ["bash", "-c", script], env=self.environment, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            raise AssertionError(
                f"`{command}` exited {result.returncode}:\n{result.stdout}{result.stderr}")
        if result.stderr.strip():
            log(result.stderr.rstrip())
        return result.stdout

    # --- replicas ----------------------------------------------------------------------------------------------

    def metrics_port(self, service: str, n: int) -> int:
        return int(self.lib(f"replica_metrics_port {service} {n}").strip())

    def container(self, service: str, n: int) -> str:
        return self.lib(f"replica_name {service} {n}").strip()

    def start(self, service: str, n: int) -> None:
        self.lib(f"replica_start {service} {n}")

    def stop(self, service: str, n: int) -> tuple[int, float]:
        """SIGTERM and the wait for the exit: (exit status, seconds it took)."""
        began = time.monotonic()
        status = int(self.lib(f"replica_stop {service} {n} 30").strip())
        return status, time.monotonic() - began

    def kill(self, service: str, n: int) -> None:
        self.lib(f"replica_kill {service} {n}")

    def running(self, service: str) -> list[int]:
        """The numbers of SERVICE's running replicas."""
        return [int(line.split()[0]) for line in self.lib(f"replicas {service}").splitlines() if line.strip()]

    def numbers_used(self, service: str) -> list[int]:
        """The numbers of every container of SERVICE, running or not."""
        result = subprocess.run(
            ["podman", "--runtime", "runc", "ps", "-a", "--filter", f"label={STACK_LABEL}",
             "--filter", f"label=passkey.service={service}", "--format", '{{index .Labels "passkey.replica"}}'],
            capture_output=True, text=True, timeout=60, check=True)
        return sorted(int(n) for n in result.stdout.split())

    def address(self, service: str, n: int) -> str:
        """Replica N's address on the stack's network (reachable from this host: the engine is rootful)."""
        for line in self.lib(f"replicas {service}").splitlines():
            fields = line.split()
            if fields and int(fields[0]) == n:
                return fields[2]
        raise AssertionError(f"{service} replica {n} is not running")

    def grpc_identity(self, name: str) -> Path:
        """The directory a container of NAME mounts at /etc/passkey/grpc (tls.crt, tls.key, ca.crt)."""
        return Path(self.lib(f'echo "$stack_grpc_dir/{name}"').strip())

    def token_kek_dir(self) -> Path:
        """The stack's token KEK directory: kek/key in it is what session-service and verification-service mount."""
        return Path(self.lib('echo "$stack_token_kek_dir"').strip())

    def logs(self, container: str, since: float | None = None) -> str:
        arguments = ["podman", "--runtime", "runc", "logs"]
        if since is not None:
            arguments += ["--since", f"{since:.3f}"]
        result = subprocess.run(arguments + [container], capture_output=True, text=True, timeout=60)
        return result.stdout + result.stderr

    def save_logs(self, directory: Path) -> None:
        """Every container's log (running, stopped or killed) into DIRECTORY/<container>.log, with its exit status
        on the first line, for after the stack is gone."""
        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.glob("*.log"):
            old.unlink()
        names = subprocess.run(
            ["podman", "--runtime", "runc", "ps", "-a", "--filter", f"label={STACK_LABEL}", "--format",
             "{{.Names}} {{.State}} {{.ExitCode}}"], capture_output=True, text=True, timeout=60).stdout
        for line in names.splitlines():
            name, state, code = (line.split() + ["", ""])[:3]
            (directory / f"{name}.log").write_text(f"# {name}: {state}, exit status {code}\n" + self.logs(name))

    def trouble(self, since: float) -> str:
        """The warnings and errors every container of the stack logged since the Unix time SINCE (at most 30
        lines each), to tell why a step failed."""
        names = subprocess.run(
            ["podman", "--runtime", "runc", "ps", "-a", "--filter", f"label={STACK_LABEL}",
             "--format", "{{.Names}}"], capture_output=True, text=True, timeout=60).stdout.split()
        report = []
        for name in sorted(names):
            lines = [line for line in self.logs(name, since).splitlines()
                     if "level=warning" in line or "level=error" in line or "event=client." in line
                     or "event=server." in line or "drain" in line]
            if lines:
                report.append(f"--- {name} ({len(lines)} lines)")
                report.extend(lines[-30:])
        return "\n".join(report)


def rpc_count(port: int) -> int | None:
    """The RPCs a service replica has served (every rpc_server_duration_seconds_count on its /metrics), or None
    while its metrics do not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as response:
            text = response.read().decode()
    except (OSError, urllib.error.URLError):
        return None
    return int(sum(float(value) for value in RPC_COUNT.findall(text)))


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError):
        return False


class FirstTraffic:
    """Watches a replica's /healthz and /metrics every 20 ms from before it starts: when it first reported ready
    (SERVING) and when its metrics first showed a served RPC, both as monotonic and Unix times."""

    def __init__(self, port: int):
        self.port = port
        self.ready_at: float | None = None
        self.first_rpc_at: float | None = None
        self.first_rpc_unix: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            if self.ready_at is None and healthy(self.port):
                self.ready_at = now
            if self.ready_at is not None:
                count = rpc_count(self.port)
                if count:
                    self.first_rpc_at = time.monotonic()
                    self.first_rpc_unix = time.time()
                    return
            self._stop.wait(0.02)

    def wait(self, timeout: float = 15) -> float:
        """Seconds from ready to the first served RPC (0 when it had served one by the time it was seen ready)."""
        self._thread.join(timeout)
        self._stop.set()
        assert self.ready_at is not None, f"the replica on metrics port {self.port} never reported ready"
        assert self.first_rpc_at is not None, (
            f"the replica on metrics port {self.port} served no RPC within {timeout} s of being started")
        return max(0.0, self.first_rpc_at - self.ready_at)


@dataclass
class LoadResult:
    ceremonies: int
    failures: int
    seconds: float
    line: str
    failure_lines: list[str]
    # (Unix time, ceremonies so far, failures so far), every half second.
    progress: list[tuple[float, int, int]] = field(default_factory=list)


class Load:
    """passkey-signin-load at a fixed rate in the background, from when the block starts (its accounts made and
    its clock running) until it ends (SIGTERM: it stops, finishes what it began and prints its results)."""

    def __init__(self, stack: Stack, rate: int = LOAD_RATE, connections: int = LOAD_CONNECTIONS):
        self.arguments = [
            str(LOAD_GENERATOR), "--url", stack.gateway_url, "--origin", stack.origin, "--rp-id", "localhost",
            "--rate", str(rate), "--connections", str(connections), "--duration", "3600",
            "--report-failures", "--progress"]
        self.connections = connections
        self.result: LoadResult | None = None
        self._progress: list[tuple[float, int, int]] = []
        self._errors: list[str] = []
        self._started = threading.Event()

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            match = re.match(r"progress unix=([0-9.]+) elapsed=[0-9.]+ ceremonies=(\d+) failures=(\d+)", line)
            if match:
                self._progress.append((float(match[1]), int(match[2]), int(match[3])))
                self._started.set()
            else:
                self._errors.append(line.rstrip())

    def __enter__(self) -> "Load":
        self.process = subprocess.Popen(
            self.arguments, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + 60
        while not self._started.wait(0.2):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                output = self.process.communicate()[0]
                raise AssertionError(
                    "the load generator did not start:\n" + output + "\n".join(self._errors))
        return self

    def ceremonies_now(self) -> int:
        return self._progress[-1][1] if self._progress else 0

    def __exit__(self, *exception) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            output, _ = self.process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            output, _ = self.process.communicate()
        self._reader.join(5)
        lines = output.splitlines()
        summary = next((line for line in lines if line.startswith("mode=")), None)
        if summary is None:
            raise AssertionError(
                f"the load generator exited {self.process.returncode} without results:\n{output}"
                + "\n".join(self._errors))
        values = dict(part.split("=", 1) for part in summary.split())
        self.result = LoadResult(
            ceremonies=int(values["ceremonies"]), failures=int(values["failures"]),
            seconds=float(values["seconds"]), line=summary,
            failure_lines=[line for line in lines if line.startswith("failure ")],
            progress=list(self._progress))


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    """The images (built when the committed tree changed; quick otherwise) and the stack, shared by the modules
    (test_access_tokens.py and test_grpc_tls.py only look; test_rollout.py changes the replicas, in order) and
    removed at the end whatever happened."""
    subprocess.run([str(REPO_ROOT / "deploy" / "images" / "build"), "--load-generator"], check=True, timeout=3600)
    assert LOAD_GENERATOR.is_file(), f"{LOAD_GENERATOR} was not built"
    extra = tmp_path_factory.mktemp("rollout") / "load.env"
    # Every client reaches the published port from one address: without this the load shares one bucket.
    extra.write_text(
        "PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS=0\n"
        "PASSKEY_RATE_LIMIT_START_PER_ADDRESS=0\n"
        "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS=0\n")
    gateway_port, metrics_port_base = choose_ports()
    stack = Stack(extra, gateway_port, metrics_port_base)
    log(f"stack {STACK_NAME}: gateway on 127.0.0.1:{gateway_port}, metrics ports from {metrics_port_base + 1}")
    began = time.monotonic()
    try:
        # What an interrupted earlier run left behind goes first.
        remove_abandoned_stacks(stack.environment)
        stack.script("down", "--volumes")
        stack.script("up")
        log(f"container stack up in {time.monotonic() - began:.1f} s")
        yield stack
    finally:
        logs = REPO_ROOT / ".build" / "rollout-logs"
        try:
            stack.save_logs(logs)
            log(f"container logs: {logs}")
        finally:
            stack.script("down", "--volumes")
            state = REPO_ROOT / ".local" / f"containers-{STACK_NAME}"
            if state.is_dir() and not any(state.iterdir()):
                state.rmdir()
