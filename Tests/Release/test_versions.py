"""--version, passkey_build_info, the license and the changelog."""

import hashlib
import re
import subprocess
import urllib.request

import pytest

import passkey_stack
from conftest import EXECUTABLES, ROOT, VERSION


def version_of(executable, environment=None):
    result = subprocess.run([str(executable), "--version"], env=environment or {}, capture_output=True, text=True,
                            timeout=30)
    return result.returncode, result.stdout, result.stderr


def test_the_version_file_is_one_semver_line():
    assert (ROOT / "VERSION").read_text() == VERSION + "\n"
    assert re.fullmatch(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?", VERSION)


@pytest.mark.parametrize("name", EXECUTABLES)
def test_every_executable_answers_version_with_an_empty_environment(name):
    # No DATABASE_URL, no certificates, no listen address: none is needed, and nothing is opened.
    status, out, err = version_of(passkey_stack.BIN / name)
    assert (status, err) == (0, "")
    assert out == f"{name} {VERSION} (commit unknown)\n"


@pytest.mark.parametrize("name", EXECUTABLES)
def test_the_commit_is_the_one_stamped_beside_the_executable(name, stamped_bin):
    directory, commit = stamped_bin
    status, out, _ = version_of(directory / name)
    assert status == 0
    assert out == f"{name} {VERSION} (commit {commit})\n"


def test_a_stamp_that_names_no_commit_reads_as_unknown(tmp_path):
    (tmp_path / "gateway").write_bytes((passkey_stack.BIN / "gateway").read_bytes())
    (tmp_path / "gateway").chmod(0o755)
    for text in ['"} 1\nforged{a="', "main", ""]:
        (tmp_path / "BUILD_COMMIT").write_text(text)
        assert version_of(tmp_path / "gateway")[1] == f"gateway {VERSION} (commit unknown)\n"
    (tmp_path / "BUILD_COMMIT").write_text("0123abc-dirty\n")
    assert version_of(tmp_path / "gateway")[1] == f"gateway {VERSION} (commit 0123abc-dirty)\n"


def test_a_version_flag_after_a_command_is_not_the_version():
    # passkey-admin reads its first word as the command: `token --version` is a usage error, not the version.
    status, out, _ = version_of_arguments(passkey_stack.BIN / "passkey-admin", ["token", "--version"])
    assert status == 2 and VERSION not in out


def version_of_arguments(executable, arguments):
    result = subprocess.run([str(executable), *arguments], env={}, capture_output=True, text=True, timeout=30)
    return result.returncode, result.stdout, result.stderr


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return response.read().decode()


def test_every_process_publishes_its_build(stamped_bin, monkeypatch):
    directory, commit = stamped_bin
    monkeypatch.setattr(passkey_stack, "BIN", directory)
    ports = {name: passkey_stack.free_port() for name in passkey_stack.SERVICES}
    stack = passkey_stack.Stack(
        "release", per_process={name: {"METRICS_LISTEN": f"127.0.0.1:{port}"} for name, port in ports.items()})
    stack.start()
    try:
        pages = {name: metrics(port) for name, port in ports.items()}
        pages["gateway"] = metrics(stack.gateway_port)
        for name, page in pages.items():
            series = [line for line in page.splitlines() if line.startswith("passkey_build_info")]
            assert len(series) == 1, (name, series)
            labels = dict(re.findall(r'(\w+)="([^"]*)"', series[0]))
            assert labels == {"version": VERSION, "commit": commit}, name
            assert series[0].endswith(" 1"), series[0]
            assert "# TYPE passkey_build_info gauge" in page, name
    finally:
        stack.stop()


def test_the_license_is_the_apache_license_2_0():
    text = (ROOT / "LICENSE").read_text()
    # The text as the Apache Software Foundation publishes it (apache.org/licenses/LICENSE-2.0.txt).
    assert hashlib.md5(text.encode()).hexdigest() == "3b83ef96387f14655fc854ddc3c6bd57"
    assert "Apache License\n                           Version 2.0, January 2004" in text


def test_the_changelog_keeps_a_changelog_with_the_version():
    text = (ROOT / "CHANGELOG.md").read_text()
    sections = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text, re.MULTILINE)
    assert sections[0] == ("Unreleased", "")
    assert (VERSION, sections[1][1]) in sections[1:], "the current version has a dated section"
    versions = [version for version, _ in sections[1:]]
    assert versions == sorted(versions, key=lambda v: tuple(int(p) for p in v.split("-")[0].split(".")),
                              reverse=True), "newest first"
    for heading in re.findall(r"^### (.+)$", text, re.MULTILINE):
        assert heading in {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, heading
