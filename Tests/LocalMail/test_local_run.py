"""./deploy/local/run with SMTP_URL unset: the mail catcher runs beside the stack, and a code shows in run's output."""

import os
import queue
import re
import signal
import subprocess
import threading
import time
import uuid

from passkey_stack import Stack, free_port, database_url, psql
from conftest import ROOT


def ready(stack):
    try:
        return stack.request("GET", "/readyz").status == 200
    except OSError:
        return False


def test_run_starts_the_mail_catcher_and_prints_each_code(fake_swift, tmp_path):
    tools, bin_dir = fake_swift
    server_url = os.environ["DATABASE_URL"]
    database = "localrun_" + uuid.uuid4().hex
    subprocess.run(["psql", server_url, "-qc", f"CREATE DATABASE {database}"], check=True)
    gateway_port, mail_port = free_port(), free_port()
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("SMTP_", "GRPC_"))}
    environment.update({
        "PATH": f"{tools}:{environment['PATH']}",
        "DATABASE_URL": database_url(server_url, database),
        "GATEWAY_LISTEN": f"127.0.0.1:{gateway_port}",
        "ADMIN_LISTEN": f"127.0.0.1:{free_port()}",
        "PASSKEY_ORIGINS": f"http://localhost:{gateway_port}",
        "PASSKEY_RP_NAME": "Local Run",
        "PASSKEY_TLS_DIR": str(tmp_path / "tls"),
        "PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE": str(tmp_path / "kek"),
        "PASSKEY_MAIL_CATCHER_LISTEN": f"127.0.0.1:{mail_port}",
        "PASSKEY_MAIL_DIR": str(tmp_path / "mail"),
    })
    (tmp_path / "kek").write_text(os.urandom(32).hex() + "\n")
    for service in ("challenge", "verification", "session"):
        port = free_port()
        environment[f"{service.upper()}_SERVICE_LISTEN"] = f"127.0.0.1:{port}"
        environment[f"{service.upper()}_SERVICE_ADDRESSES"] = f"127.0.0.1:{port}"
    run = subprocess.Popen([str(ROOT / "deploy" / "local" / "run")], env=environment, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines = queue.Queue()
    output = []

    def read():
        for line in run.stdout:
            output.append(line)
            lines.put(line.rstrip("\n"))

    threading.Thread(target=read, daemon=True).start()

    def wait_for(pattern, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            found = re.search(pattern, line)
            if found:
                return found
        raise AssertionError(f"no line matching {pattern!r} in run's output:\n" + "".join(output[-100:]))

    try:
        wait_for(r"mail-catcher listening on 127\.0\.0\.1:%d" % mail_port)
        wait_for(r"open http://localhost:%d/" % gateway_port)
        stack = Stack.__new__(Stack)
        stack.gateway_port = gateway_port
        stack.ssl_context = None
        deadline = time.monotonic() + 60
        while not ready(stack):
            assert time.monotonic() < deadline, "".join(output[-100:])
            time.sleep(0.2)
        address = f"run-{uuid.uuid4().hex[:10]}@example.com"
        created = stack.request("POST", "/v1/accounts/password",
                                {"email": address, "password": "local run password", "displayName": "Ada"})
        assert created.status == 201, created.body
        found = wait_for(r"mail to %s: Your Local Run .*\[code (\d{8})\] \((.+\.eml)\)" % re.escape(address))
        assert found.group(2).startswith(str(tmp_path / "mail"))
        assert found.group(1) in open(found.group(2)).read()
        # The build is stamped with this checkout's commit.
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
        assert (bin_dir / "BUILD_COMMIT").read_text().startswith(head.strip())
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGTERM)
        status = run.wait(timeout=30)
        subprocess.run(["psql", server_url, "-qc", f"DROP DATABASE IF EXISTS {database} WITH (FORCE)"])
    assert status == 0, "".join(output[-50:])
    # Ctrl-C stopped the catcher too: its port is free again.
    assert subprocess.run(["bash", "-c", f"exec 3<>/dev/tcp/127.0.0.1/{mail_port}"],
                          capture_output=True).returncode != 0
