"""schemathesis against the running admin listener, with a real admin token (read and write): every phase and check
of schemathesis.toml. The run must end with no failure, and no response may be a 5xx."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "Tests" / "Support" / "python"))

from passkey_stack import BIN, Stack, free_port  # noqa: E402

ARTIFACTS = ROOT / ".build" / "contract"


@pytest.fixture(scope="module")
def admin_stack():
    port = free_port()
    stack = Stack("adminschema", environment={"ADMIN_LISTEN": f"127.0.0.1:{port}",
                                             "PASSKEY_RATE_LIMIT_ADMIN_PER_ADDRESS": "0"}).start()
    stack.admin_url = f"http://127.0.0.1:{port}"
    yield stack
    stack.stop()


def test_schemathesis_finds_no_failure_and_no_server_error(admin_stack):
    token = subprocess.run(
        [BIN / "passkey-admin", "token", "create", "--name", "schemathesis", "--scopes", "read,write"],
        env={**os.environ, "DATABASE_URL": admin_stack.url}, capture_output=True, text=True, check=True,
    ).stdout.strip().splitlines()[-1]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    st = pathlib.Path(sys.executable).with_name("st")
    run = subprocess.run(
        [str(st), "--config-file", "schemathesis.toml", "--no-color", "run",
         f"{admin_stack.admin_url}/admin/v1/openapi.json", "--url", admin_stack.admin_url,
         "--header", f"Authorization: Bearer {token}"],
        cwd=HERE, env={**os.environ, "HYPOTHESIS_STORAGE_DIRECTORY": str(ARTIFACTS / "hypothesis-admin")},
        capture_output=True, text=True, timeout=900)
    output = run.stdout + run.stderr
    (ARTIFACTS / "schemathesis-admin.txt").write_text(output.replace(token, "<token>"))
    summary = output[output.rfind("SUMMARY"):] if "SUMMARY" in output else output[-3000:]
    assert run.returncode == 0, f"schemathesis failed (output in {ARTIFACTS / 'schemathesis-admin.txt'}):\n{summary}"
    assert "Errors:" not in summary and "Failures:" not in summary, summary
    assert re.search(r"(\d+) generated, (\d+) passed", summary), summary
    assert token not in admin_stack.log_text(), "an admin token in a log"
    assert admin_stack.exited() == {}, admin_stack.log_text()
