"""The release workflow (.github/workflows/release.yml), checked offline: it has never run here (no registry but
Debian's and PyPI is reachable), so actionlint (PyPI) checks its syntax, expressions and action inputs, and this
test that it builds with the scripts the other suites run and publishes every image compose.yaml names."""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys

import pytest
import yaml

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKFLOW = REPO_ROOT / ".github" / "workflows" / "release.yml"


def actionlint() -> str:
    beside = pathlib.Path(sys.executable).parent / "actionlint"
    found = str(beside) if beside.exists() else shutil.which("actionlint")
    if not found:
        pytest.fail("actionlint is not installed (pip install -r Tests/requirements.txt)")
    return found


def test_actionlint_passes():
    result = subprocess.run([actionlint(), "-no-color", str(WORKFLOW)], capture_output=True, text=True,
                            cwd=REPO_ROOT, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_it_runs_for_version_tags_builds_with_the_tested_scripts_and_says_it_is_untested():
    text = WORKFLOW.read_text()
    assert "UNTESTED HERE" in text
    workflow = yaml.safe_load(text)
    # PyYAML reads the key `on` as True.
    triggers = workflow.get("on", workflow.get(True))
    assert list(triggers) == ["push"] and triggers["push"]["tags"] == ["v*.*.*"]
    steps = "\n".join(step.get("run", "") for step in workflow["jobs"]["images"]["steps"])
    assert "deploy/images/build" in steps and "deploy/compose/build-image" in steps


def test_it_publishes_every_image_compose_yaml_names():
    compose = yaml.safe_load((REPO_ROOT / "compose.yaml").read_text())
    named = {re.sub(r"^\$\{PASSKEY_IMAGE_PREFIX:-localhost/passkey/\}(.+):\$\{PASSKEY_IMAGE_TAG:-latest\}$", r"\1",
                    service["image"]) for service in compose["services"].values()}
    loop = re.search(r"for name in ([^;]+);", WORKFLOW.read_text())
    assert loop, "no loop over the image names in release.yml"
    assert named <= set(loop.group(1).split()), named - set(loop.group(1).split())
