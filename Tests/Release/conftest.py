"""The release suite: every executable answers --version with the VERSION file's version and the commit stamped
beside it, without configuration or network, and every process of a running stack publishes the same in
passkey_build_info; the LICENSE is the Apache License 2.0 and the changelog has the version's section."""

import os
import pathlib
import shutil
import sys

import pytest

TESTS = pathlib.Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
sys.path.insert(0, str(TESTS / "Support" / "python"))

import passkey_stack  # noqa: E402

EXECUTABLES = ("gateway", "challenge-service", "verification-service", "session-service", "passkey-admin",
               "passkey-migrate", "passkey-import")
VERSION = (ROOT / "VERSION").read_text().strip()


@pytest.fixture(scope="session")
def stamped_bin(tmp_path_factory):
    """A copy of every executable with a BUILD_COMMIT beside it, as deploy/local/run and the images have."""
    directory = tmp_path_factory.mktemp("bin")
    for name in EXECUTABLES:
        shutil.copy2(passkey_stack.BIN / name, directory / name)
    commit = os.urandom(20).hex()
    (directory / "BUILD_COMMIT").write_text(commit + "\n")
    return directory, commit
