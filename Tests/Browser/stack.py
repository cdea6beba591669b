"""The real stack for browser tests: a fresh database on DATABASE_URL's server, the three services and the gateway."""
import os
import pathlib
import socket
import subprocess
import tempfile
import time
import urllib.parse
import uuid

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("PASSKEY_BIN_DIR", ROOT / ".build" / "debug"))


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


def wait_for_port(port, timeout=20):
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


class Stack:
    def __init__(self):
        self.server_url = os.environ["DATABASE_URL"]
        self.database = "browser_" + uuid.uuid4().hex
        self.url = database_url(self.server_url, self.database)
        self.logs = pathlib.Path(tempfile.mkdtemp(prefix="passkey-browser-"))
        self.processes = []
        self.gateway_port = free_port()

    @property
    def origin(self):
        return f"http://localhost:{self.gateway_port}"

    def start(self):
        subprocess.run(["psql", self.server_url, "-qc", f"CREATE DATABASE {self.database}"], check=True)
        ports = {name: free_port() for name in ("challenge", "session", "verification")}
        env = dict(os.environ)
        env.update({
            "DATABASE_URL": self.url,
            "DATABASE_POOL_SIZE": "4",
            "PASSKEY_RP_ID": "localhost",
            "PASSKEY_ORIGINS": self.origin,
            "PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL": "0",
            "PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS": "0",
            "PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS": "0",
            "PASSKEY_RATE_LIMIT_START_PER_ADDRESS": "0",
            "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "0",
            "GATEWAY_LISTEN": f"127.0.0.1:{self.gateway_port}",
        })
        for name, port in ports.items():
            env[f"{name.upper()}_SERVICE_LISTEN"] = f"127.0.0.1:{port}"
            env[f"{name.upper()}_SERVICE_ADDRESSES"] = f"127.0.0.1:{port}"
        subprocess.run([str(BIN / "passkey-migrate")], env=env, check=True, capture_output=True)
        for name in ("challenge-service", "session-service", "verification-service", "gateway"):
            log = open(self.logs / f"{name}.log", "wb")
            self.processes.append(subprocess.Popen([str(BIN / name)], env=env, stdout=log, stderr=log))
        for port in list(ports.values()) + [self.gateway_port]:
            wait_for_port(port)
        return self

    def stop(self):
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
        subprocess.run(["psql", self.server_url, "-qc", f"DROP DATABASE IF EXISTS {self.database} WITH (FORCE)"])

    def log_text(self):
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')}" for p in sorted(self.logs.glob("*.log")))
