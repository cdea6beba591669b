"""The local mail catcher suite: deploy/local/mail-catcher, which ./deploy/local/run starts when SMTP_URL is unset,
takes the verification and recovery mail of a real stack, prints each message's recipient, subject and code, and
keeps it as an .eml file; the printed codes verify the address and recover the account."""

import os
import pathlib
import queue
import signal
import subprocess
import sys
import threading

import pytest

TESTS = pathlib.Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
sys.path.insert(0, str(TESTS / "Support" / "python"))

from passkey_stack import Stack  # noqa: E402

CATCHER = ROOT / "deploy" / "local" / "mail-catcher"


class Catcher:
    """The mail catcher as ./deploy/local/run starts it, its printed lines read as they come."""

    def __init__(self, directory):
        self.directory = directory
        self.process = subprocess.Popen(
            [sys.executable, str(CATCHER), "--listen", "127.0.0.1:0", "--directory", str(directory)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        first = self.next_line(timeout=10)
        assert first.startswith("mail-catcher listening on 127.0.0.1:"), first
        self.port = int(first.split("127.0.0.1:")[1].split(",")[0])

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def next_line(self, timeout=20):
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"the mail catcher printed nothing in {timeout} s") from None

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=10)


@pytest.fixture
def catcher(tmp_path):
    running = Catcher(tmp_path / "mail")
    yield running
    if running.process.poll() is None:
        running.stop()


@pytest.fixture(scope="module")
def module_catcher(tmp_path_factory):
    running = Catcher(tmp_path_factory.mktemp("mail"))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def stack(module_catcher):
    # What ./deploy/local/run gives session-service when SMTP_URL is unset.
    running = Stack("localmail", environment={
        "SMTP_URL": f"smtp://127.0.0.1:{module_catcher.port}", "SMTP_STARTTLS": "off",
        "SMTP_FROM": "no-reply@localhost", "PASSKEY_RP_NAME": "Local Mail",
    }).start()
    yield running
    running.stop()


@pytest.fixture
def fake_swift(tmp_path):
    """A `swift` for ./deploy/local/run that builds nothing and names a directory holding copies of the test build's
    executables, so the script runs as it is without a release build (and stamps the copies, not the test build)."""
    import shutil

    from passkey_stack import BIN

    bin_dir = tmp_path / "release"
    bin_dir.mkdir()
    for name in ("gateway", "challenge-service", "verification-service", "session-service", "passkey-migrate",
                 "passkey-admin"):
        shutil.copy2(BIN / name, bin_dir / name)
    tools = tmp_path / "tools"
    tools.mkdir()
    swift = tools / "swift"
    swift.write_text(f'#!/bin/sh\ncase "$*" in *--show-bin-path*) echo "{bin_dir}" ;; esac\nexit 0\n')
    swift.chmod(0o755)
    return tools, bin_dir
