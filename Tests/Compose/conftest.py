"""The compose suite: compose.yaml brought up with podman-compose on the images deploy/images/build and
deploy/compose/build-image make here, a passkey sign-up and sign-in through its gateway, verification and recovery
mail read from its mail catcher, an `up` again after a stop in the middle of starting, and `down`.

Podman 4.3 (Debian 12) cannot run compose.yaml's depends_on as written (podman-compose ignores service_healthy
below podman 4.6, and the `--requires` it makes fails to start a container after an exited one-shot), so `up` is
deploy/compose/up, which brings the services up stage by stage with podman-compose and waits for each condition
of compose.yaml's depends_on itself. Docker Compose and newer podman run those conditions themselves.

Each run has a project of its own (`passkey-compose-test-<pid>`, its containers, network and volumes) on a free
loopback port, removed at the end whatever happened."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
import yaml

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO_ROOT / "compose.yaml"
COMPOSE_UP = REPO_ROOT / "deploy" / "compose" / "up"
sys.path.insert(0, str(REPO_ROOT / "Tests" / "Support" / "python"))

PODMAN = ["podman", "--runtime", "runc"]
PROJECT = f"passkey-compose-test-{os.getpid()}"
PROJECT_PREFIX = "passkey-compose-test-"
IMAGES = ["postgres", "migrate", "challenge-service", "verification-service", "session-service", "gateway"]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def podman_compose_command() -> list[str]:
    """podman-compose from the tests' venv (Tests/requirements.txt), else from PATH."""
    beside = pathlib.Path(sys.executable).parent / "podman-compose"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("podman-compose")
    if not found:
        pytest.fail("podman-compose is not installed (pip install -r Tests/requirements.txt)")
    return [found]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def image_revision(name: str) -> str | None:
    result = subprocess.run(
        PODMAN + ["image", "inspect", "--format", '{{index .Labels "org.opencontainers.image.revision"}}',
                  f"localhost/passkey/{name}:latest"], capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else None


def ensure_images() -> None:
    """This commit's images: deploy/images/build when one is missing or was built from another commit (after
    Tests/Containers in deploy/local/test they are current, and nothing is built), and the compose tools image.
    PASSKEY_COMPOSE_ANY_IMAGES=1 takes whatever images are there, for a quick run while editing compose.yaml."""
    head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    if os.environ.get("PASSKEY_COMPOSE_ANY_IMAGES") == "1":
        head = None
    if any(image_revision(name) is None or (head and image_revision(name) != head) for name in IMAGES):
        log("building the images of this commit (deploy/images/build)")
        subprocess.run([str(REPO_ROOT / "deploy" / "images" / "build")], check=True, timeout=3600)
    if image_revision("compose-tools") is None or (head and image_revision("compose-tools") != head):
        subprocess.run([str(REPO_ROOT / "deploy" / "compose" / "build-image")], check=True, timeout=600)


class Compose:
    """podman-compose on compose.yaml for this run's project."""

    def __init__(self, project: str, gateway_port: int):
        self.project = project
        self.gateway_port = gateway_port
        self.gateway_url = f"http://127.0.0.1:{gateway_port}"
        self.origin = f"http://localhost:{gateway_port}"
        self.environment = {**os.environ, "PASSKEY_GATEWAY_PORT": str(gateway_port)}
        self.environment.pop("PASSKEY_IMAGE_PREFIX", None)
        self.environment.pop("PASSKEY_IMAGE_TAG", None)
        self.services = yaml.safe_load(COMPOSE_FILE.read_text())["services"]

    def run(self, *arguments: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(
            podman_compose_command() + ["-f", str(COMPOSE_FILE), "-p", self.project, *arguments],
            env=self.environment, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"podman-compose {' '.join(arguments)} exited {result.returncode}:\n"
                                 f"{result.stdout}{result.stderr}")
        return result

    def container(self, service: str) -> str:
        """The container podman-compose names for SERVICE (project_service_1)."""
        return f"{self.project}_{service}_1"

    def state(self, service: str) -> dict:
        result = subprocess.run(PODMAN + ["inspect", "--format", "{{json .State}}", self.container(service)],
                                capture_output=True, text=True)
        return json.loads(result.stdout) if result.returncode == 0 else {}

    def healthy(self, service: str) -> bool:
        return subprocess.run(PODMAN + ["healthcheck", "run", self.container(service)],
                              capture_output=True).returncode == 0

    def logs(self, service: str) -> str:
        result = subprocess.run(PODMAN + ["logs", self.container(service)], capture_output=True, text=True)
        return result.stdout + result.stderr

    def up(self) -> float:
        """deploy/compose/up for this project: returns the seconds it took; fails with what it printed."""
        began = time.monotonic()
        result = subprocess.run([sys.executable, str(COMPOSE_UP), "--project", self.project], env=self.environment,
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, f"deploy/compose/up exited {result.returncode}:\n{result.stdout}{result.stderr}"
        log(result.stdout.rstrip())
        return time.monotonic() - began

    def start_up(self) -> subprocess.Popen:
        """deploy/compose/up in the background, to be stopped in the middle."""
        return subprocess.Popen([sys.executable, str(COMPOSE_UP), "--project", self.project], env=self.environment,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def request(self, method: str, path: str, body: dict | None = None, token: str | None = None):
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(self.gateway_url + path, method=method, headers=headers,
                                         data=json.dumps(body).encode() if body is not None else None)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    def volume_path(self, volume: str) -> pathlib.Path:
        """Where the project's named VOLUME lives on this host (the engine is rootful)."""
        result = subprocess.run(PODMAN + ["volume", "inspect", "--format", "{{.Mountpoint}}",
                                          f"{self.project}_{volume}"], capture_output=True, text=True, check=True)
        return pathlib.Path(result.stdout.strip())

    def down(self) -> None:
        self.run("down", "-v", "-t", "10", check=False, timeout=300)


def remove_abandoned_projects() -> None:
    """Projects of earlier runs whose process is gone (killed before the teardown ran)."""
    names = subprocess.run(PODMAN + ["ps", "-a", "--format", '{{index .Labels "com.docker.compose.project"}}'],
                           capture_output=True, text=True).stdout.split()
    for name in sorted(set(names)):
        owner = name.removeprefix(PROJECT_PREFIX)
        if not name.startswith(PROJECT_PREFIX) or not owner.isdigit() or name == PROJECT:
            continue
        try:
            os.kill(int(owner), 0)
            continue
        except ProcessLookupError:
            pass
        log(f"removing the compose project {name} of an earlier run")
        Compose(name, 0).down()


@pytest.fixture(scope="session")
def compose():
    ensure_images()
    remove_abandoned_projects()
    stack = Compose(PROJECT, free_port())
    log(f"compose project {PROJECT}: gateway on 127.0.0.1:{stack.gateway_port}")
    try:
        yield stack
    finally:
        stack.down()
