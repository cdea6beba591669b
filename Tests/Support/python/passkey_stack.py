"""The real stack for the Python suites: a fresh database on DATABASE_URL's server, the three services and the
gateway, each one process of PASSKEY_BIN_DIR on a free port, talking mutual TLS with certificates made by
deploy/local/certificates.sh (as `deploy/local/run` does)."""

import json
import os
import pathlib
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

ROOT = pathlib.Path(__file__).resolve().parents[3]
BIN = pathlib.Path(os.environ.get("PASSKEY_BIN_DIR", ROOT / ".build" / "debug"))
SERVICES = ("challenge-service", "session-service", "verification-service")
CERTIFICATES_SCRIPT = ROOT / "deploy" / "local" / "certificates.sh"

_handed_out = set()


def free_port():
    """A port nobody listens on, never the same one twice: the servers listen with SO_REUSEPORT, so two of them
    given the same port would both bind it."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _handed_out:
            _handed_out.add(port)
            return port


def wait_for_port(port, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"port {port} never opened")


def database_url(server_url, name):
    """server_url with its database replaced (URL or keyword/value form)."""
    if "://" not in server_url:
        return f"{server_url} dbname={name}"
    parts = urllib.parse.urlsplit(server_url)
    # Built by hand: urlunsplit drops the empty host of socket URLs such as postgresql:///db?host=/tmp/x.
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme}://{parts.netloc}/{name}{query}"


def certificates_shell(command):
    """Runs `command` in bash with deploy/local/certificates.sh sourced."""
    subprocess.run(
        ["bash", "-c", f'set -euo pipefail; source "{CERTIFICATES_SCRIPT}"; {command}'], check=True,
        capture_output=True)


def make_certificates(directory, trust_domain="passkey.internal"):
    """The CA and one certificate per process in `directory` (see deploy/local/certificates.sh)."""
    certificates_shell(f'make_grpc_certificates "{directory}" "{trust_domain}"')
    return pathlib.Path(directory)


def tls_environment(directory, name, trust_domain="passkey.internal"):
    directory = pathlib.Path(directory)
    return {
        "GRPC_TLS_CERTIFICATE": str(directory / f"{name}.pem"),
        "GRPC_TLS_KEY": str(directory / f"{name}.key"),
        "GRPC_TLS_CA": str(directory / "ca.pem"),
        "GRPC_TRUST_DOMAIN": trust_domain,
    }


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)


def psql(url, statement):
    """The rows of `statement` on the database at `url`, each a list of its text columns; a failing statement
    raises."""
    result = subprocess.run(["psql", url, "-Atq", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-c", statement], check=True,
                            capture_output=True, text=True)
    return [line.split("\t") for line in result.stdout.splitlines() if line]


def call(base_url, method, path, body=None, token=None, client_address=None, raw=None, headers=None,
         ssl_context=None, timeout=10):
    """One HTTP/1.1 request to the gateway at `base_url`: `body` as JSON (or `raw` bytes), `token` as a bearer,
    `client_address` as X-Forwarded-For; the response whatever its status."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(base_url + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if client_address:
        request.add_header("X-Forwarded-For", client_address)
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=ssl_context) as response:
            return Response(response.status, response.headers, response.read())
    except urllib.error.HTTPError as error:
        return Response(error.code, error.headers, error.read())


def stop_all(processes):
    """SIGTERM to every process, then waits for each (15 s) and kills what is still running."""
    processes = list(processes)
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()


def base_environment(database_url, origin, key_encryption_key):
    """What every process of a stack on this machine runs with: the database, the relying party (localhost and
    `origin`), a small pool, and the access-token key-encryption key file."""
    env = dict(os.environ)
    env.update({
        "DATABASE_URL": database_url,
        "DATABASE_POOL_SIZE": "4",
        "PASSKEY_RP_ID": "localhost",
        "PASSKEY_ORIGINS": origin,
        "PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE": str(key_encryption_key),
    })
    return env


class Stack:
    """Started with `start()`, stopped with `stop()`; `request()` calls the gateway over HTTP/1.1.

    `environment` is added to every process's; `per_process` maps a process name to more of its own. With
    `ssl_context` (the gateway given GATEWAY_TLS_CERTIFICATE and GATEWAY_TLS_KEY in `environment`), `request()` speaks
    HTTPS with that context."""

    def __init__(self, prefix="stack", environment=None, per_process=None, ssl_context=None):
        if not os.environ.get("DATABASE_URL"):
            raise RuntimeError("DATABASE_URL is not set (deploy/local/test sets it)")
        self.server_url = os.environ["DATABASE_URL"]
        self.database = f"{prefix}_" + uuid.uuid4().hex
        self.url = database_url(self.server_url, self.database)
        self.logs = pathlib.Path(tempfile.mkdtemp(prefix=f"passkey-{prefix}-"))
        self.certificates = self.logs / "tls"
        # The key-encryption key that seals the access-token signing keys (32 random bytes, hex).
        self.key_encryption_key = self.logs / "token-kek"
        self.key_encryption_key.write_text(os.urandom(32).hex() + "\n")
        self.key_encryption_key.chmod(0o600)
        self.processes = {}
        self.gateway_port = free_port()
        self.ports = {name: free_port() for name in SERVICES}
        self.extra = dict(environment or {})
        self.per_process = dict(per_process or {})
        self.ssl_context = ssl_context

    @property
    def origin(self):
        return f"http://localhost:{self.gateway_port}"

    @property
    def base_url(self):
        scheme = "https" if self.ssl_context else "http"
        return f"{scheme}://127.0.0.1:{self.gateway_port}"

    def environment(self, name):
        """The environment process `name` runs with."""
        env = base_environment(self.url, self.origin, self.key_encryption_key)
        env["GATEWAY_LISTEN"] = f"127.0.0.1:{self.gateway_port}"
        for service, port in self.ports.items():
            prefix = service.split("-")[0].upper()
            env[f"{prefix}_SERVICE_LISTEN"] = f"127.0.0.1:{port}"
            env[f"{prefix}_SERVICE_ADDRESSES"] = f"127.0.0.1:{port}"
        env.update(tls_environment(self.certificates, name))
        env.update(self.extra)
        env.update(self.per_process.get(name, {}))
        return env

    def start(self):
        subprocess.run(["psql", self.server_url, "-qc", f"CREATE DATABASE {self.database}"], check=True)
        return self.launch()

    def launch(self):
        """Certificates, migrations, every process, and waits until the gateway is ready; the database exists."""
        make_certificates(self.certificates)
        subprocess.run(
            [str(BIN / "passkey-migrate")], env=self.environment("passkey-migrate"), check=True, capture_output=True)
        for name in SERVICES + ("gateway",):
            log = open(self.logs / f"{name}.log", "wb")
            self.processes[name] = subprocess.Popen(
                [str(BIN / name)], env=self.environment(name), stdout=log, stderr=log)
        for port in list(self.ports.values()) + [self.gateway_port]:
            wait_for_port(port)
        deadline = time.monotonic() + 30
        while self.request("GET", "/readyz").status != 200:
            if time.monotonic() > deadline:
                raise RuntimeError("the stack never became ready:\n" + self.log_text())
            time.sleep(0.1)
        return self

    def kill(self, name):
        """SIGKILL to one process (Tests/Recovery's crash test): it gets no chance to finish anything."""
        self.processes[name].kill()
        self.processes[name].wait(timeout=15)

    def restart(self, name):
        """Starts one process of the stack again, its output appended to its log, and waits for its port."""
        log = open(self.logs / f"{name}.log", "ab")
        self.processes[name] = subprocess.Popen([str(BIN / name)], env=self.environment(name), stdout=log, stderr=log)
        wait_for_port(self.gateway_port if name == "gateway" else self.ports[name])

    def exited(self):
        """The processes that are no longer running, with their exit status."""
        return {name: process.poll() for name, process in self.processes.items() if process.poll() is not None}

    def stop(self):
        self.stop_processes()
        subprocess.run(["psql", self.server_url, "-qc", f"DROP DATABASE IF EXISTS {self.database} WITH (FORCE)"])

    def stop_processes(self):
        stop_all(self.processes.values())

    def request(self, method, path, body=None, token=None, client_address=None, raw=None, headers=None):
        return call(self.base_url, method, path, body=body, token=token, client_address=client_address, raw=raw,
                    headers=headers, ssl_context=self.ssl_context)

    def sql(self, statement):
        """The rows of `statement` on the stack's database (see `psql`)."""
        return psql(self.url, statement)

    def log_text(self):
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-20000:]}" for p in sorted(self.logs.glob("*.log")))
