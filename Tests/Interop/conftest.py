"""Shared fixtures for the interop tests: our binaries, the .proto files compiled by grpcio-tools, servers."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
PROTOS = PACKAGE_ROOT / "Shared" / "Composition" / "Protos"


def bin_dir() -> Path:
    configured = os.environ.get("PASSKEY_BIN_DIR", ".build/debug")
    path = Path(configured)
    return path if path.is_absolute() else PACKAGE_ROOT / path


def binary(name: str) -> Path:
    path = bin_dir() / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run `swift build --build-tests` first")
    return path


@pytest.fixture(scope="session")
def protos(tmp_path_factory):
    """Compiles echo.proto and health.proto; returns (echo_pb2, echo_pb2_grpc, health_pb2, health_pb2_grpc)."""
    from grpc_tools import protoc

    source = tmp_path_factory.mktemp("proto-src")
    output = tmp_path_factory.mktemp("proto-out")
    # The generated health module must not live under `grpc/`, where it would shadow the grpcio package.
    (source / "echo" / "v1").mkdir(parents=True)
    (source / "healthv1").mkdir()
    shutil.copy(PROTOS / "echo" / "v1" / "echo.proto", source / "echo" / "v1" / "echo.proto")
    shutil.copy(PROTOS / "grpc" / "health" / "v1" / "health.proto", source / "healthv1" / "health.proto")
    result = protoc.main(
        [
            "protoc",
            f"-I{source}",
            f"--python_out={output}",
            f"--grpc_python_out={output}",
            "echo/v1/echo.proto",
            "healthv1/health.proto",
        ]
    )
    assert result == 0, "grpcio-tools could not compile the .proto files"
    sys.path.insert(0, str(output))
    from echo.v1 import echo_pb2, echo_pb2_grpc  # noqa: E402
    from healthv1 import health_pb2, health_pb2_grpc  # noqa: E402

    return echo_pb2, echo_pb2_grpc, health_pb2, health_pb2_grpc


class EchoServer:
    """Our grpc-echo-server on a free port."""

    def __init__(self, env=None):
        environment = dict(os.environ)
        environment.update(env or {})
        self.process = subprocess.Popen(
            [str(binary("grpc-echo-server")), "127.0.0.1:0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=environment,
            text=True,
        )
        self.address = None
        deadline = time.time() + 15
        while time.time() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            match = re.search(r"event=server.started .*address=(\S+)", line)
            if match:
                self.address = match.group(1)
                break
        if self.address is None:
            self.process.kill()
            pytest.fail("grpc-echo-server did not start")
        self.port = int(self.address.rsplit(":", 1)[1])

    def rss_kib(self) -> int:
        return proc_status_kib(self.process.pid, "VmRSS")

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout=15) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def proc_status_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"{field} not in /proc/{pid}/status")


@pytest.fixture
def echo_server():
    server = EchoServer()
    yield server
    server.stop()


@pytest.fixture
def server_factory():
    servers = []

    def make(env=None):
        server = EchoServer(env)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def certificates(tmp_path_factory):
    """A CA, a server certificate for 127.0.0.1 and a client certificate, made with the openssl command."""
    directory = tmp_path_factory.mktemp("certs")
    script = """
set -e
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=ca
for name in server client; do
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $name.key -out $name.csr -subj /CN=$name
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > $name.ext
  openssl x509 -req -in $name.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $name.pem -days 2 -extfile $name.ext
done
"""
    subprocess.run(["sh", "-c", script], cwd=directory, check=True, capture_output=True)
    return directory
