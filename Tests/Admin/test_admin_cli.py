"""passkey-admin's token commands against a real Postgres: a token is printed once and stored only as a digest,
listed, revoked, refused for bad input with the documented exit statuses, and each change is an audit event."""

import hashlib
import json
import os
import pathlib
import re
import subprocess
import uuid

import psycopg
import pytest

BIN = pathlib.Path(os.environ.get("PASSKEY_BIN_DIR", pathlib.Path(__file__).resolve().parents[2] / ".build" / "debug"))
TOKEN = re.compile(r"^pkadm_([0-9a-f]{16})_[A-Za-z0-9_-]{43}$")


@pytest.fixture(scope="module")
def database():
    server = os.environ["DATABASE_URL"]
    name = f"admin_cli_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    url = server.replace("/postgres?", f"/{name}?") if "/postgres?" in server else f"{server} dbname={name}"
    subprocess.run([BIN / "passkey-migrate"], env={**os.environ, "DATABASE_URL": url}, check=True,
                   capture_output=True)
    yield url
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE {name} WITH (FORCE)")


def admin(url, *arguments, env=None):
    environment = {**os.environ, "DATABASE_URL": url, "USER": "oncall", **(env or {})}
    if url is None:
        del environment["DATABASE_URL"]
    return subprocess.run([BIN / "passkey-admin", *arguments], env=environment, capture_output=True, text=True,
                          timeout=60)


def rows(url, sql, *parameters):
    with psycopg.connect(url, autocommit=True) as connection:
        return connection.execute(sql, parameters).fetchall()


def test_a_token_is_printed_once_alone_on_the_last_line_and_only_its_digest_is_stored(database):
    made = admin(database, "token", "create", "--name", "first operator", "--scopes", "read,write")
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip().splitlines()[-1]
    match = TOKEN.match(token)
    assert match, made.stdout
    token_id = match.group(1)
    stored = rows(database, "SELECT id, digest, name, scopes, created_by, expires_at FROM admin_tokens WHERE id = %s",
                  token_id)
    assert stored == [(token_id, hashlib.sha256(token.encode()).digest(), "first operator", ["read", "write"],
                       "cli:oncall", None)]
    # The secret is nowhere in the database.
    dump = subprocess.run(["pg_dump", "--data-only", database], capture_output=True, text=True, check=True).stdout
    assert token not in dump and token.split("_")[2] not in dump

    listed = admin(database, "token", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    entry = next(item for item in json.loads(listed.stdout) if item["id"] == token_id)
    assert entry["name"] == "first operator" and entry["scopes"] == ["read", "write"]
    assert entry["revokedAt"] is None and entry["expiresAt"] is None and "token" not in entry
    table = admin(database, "token", "list")
    assert table.stdout.splitlines()[0].split()[:4] == ["ID", "NAME", "SCOPES", "STATE"]
    assert any(line.startswith(token_id) and " active " in line for line in table.stdout.splitlines())


def test_json_output_an_expiry_and_revocation(database):
    made = admin(database, "token", "create", "--name", "ci", "--scopes", "read", "--expires-in", "12h", "--json")
    assert made.returncode == 0, made.stderr
    document = json.loads(made.stdout)
    assert TOKEN.match(document["token"]) and document["scopes"] == ["read"] and document["expiresAt"]
    token_id = document["id"]
    [(seconds,)] = rows(database, "SELECT extract(epoch FROM expires_at - created_at) FROM admin_tokens WHERE id = %s",
                        token_id)
    assert abs(float(seconds) - 12 * 3600) < 5

    revoked = admin(database, "token", "revoke", token_id)
    assert revoked.returncode == 0 and token_id in revoked.stdout
    assert rows(database, "SELECT revoked_at IS NOT NULL FROM admin_tokens WHERE id = %s", token_id) == [(True,)]
    again = admin(database, "token", "revoke", token_id)
    assert again.returncode == 3 and "no active admin token" in again.stderr
    unknown = admin(database, "token", "revoke", "0123456789abcdef")
    assert unknown.returncode == 3
    listed = admin(database, "token", "list")
    assert any(line.startswith(token_id) and " revoked " in line for line in listed.stdout.splitlines())

    events = rows(database, """SELECT type, actor, actor_id, detail->>'token.id' FROM audit_events
                               WHERE detail->>'token.id' = %s ORDER BY id""", token_id)
    assert events == [("audit.admin_token.created", "admin", "cli:oncall", token_id),
                      ("audit.admin_token.revoked", "admin", "cli:oncall", token_id)]


@pytest.mark.parametrize("arguments, message", [
    ([], "usage"),
    (["token"], "usage"),
    (["token", "create", "--name", "x"], "needs --name and --scopes"),
    (["token", "create", "--scopes", "read"], "needs --name and --scopes"),
    (["token", "create", "--name", "x", "--scopes", "admin"], "unknown scope"),
    (["token", "create", "--name", "x", "--scopes", "read,read"], "named twice"),
    (["token", "create", "--name", "x", "--scopes", ""], "unknown scope"),
    (["token", "create", "--name", "n" * 65, "--scopes", "read"], "1 to 64"),
    (["token", "create", "--name", "tab\there", "--scopes", "read"], "1 to 64"),
    (["token", "create", "--name", "x", "--scopes", "read", "--expires-in", "0"], "--expires-in"),
    (["token", "create", "--name", "x", "--scopes", "read", "--expires-in", "5y"], "--expires-in"),
    (["token", "create", "--name", "x", "--scopes", "read", "--expires-in", "4000d"], "--expires-in"),
    (["token", "create", "--name", "x", "--scopes", "read", "--name", "y"], "given twice"),
    (["token", "create", "--name", "x", "--scopes", "read", "--admin"], "unknown option"),
    (["token", "create", "--name"], "needs a value"),
    (["token", "revoke"], "one token ID"),
    (["token", "revoke", "NOT-A-TOKEN-ID!!"], "16 lowercase hex digits"),
    (["token", "revoke", "0123456789ABCDEF"], "16 lowercase hex digits"),
    (["token", "list", "extra"], "unexpected argument"),
    (["token", "delete"], "unknown command"),
])
def test_bad_input_exits_2_and_stores_nothing(database, arguments, message):
    before = rows(database, "SELECT count(*) FROM admin_tokens")
    result = admin(database, *arguments)
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert message in result.stderr
    assert result.stdout == ""
    assert rows(database, "SELECT count(*) FROM admin_tokens") == before


def test_without_a_database_it_says_which_variable(database):
    missing = admin(None, "token", "list")
    assert missing.returncode == 2 and "DATABASE_URL is not set" in missing.stderr
    unreachable = admin("postgresql://nobody:secret@127.0.0.1:1/none?connect_timeout=2", "token", "create",
                        "--name", "x", "--scopes", "read")
    assert unreachable.returncode == 1 and "DATABASE_URL" in unreachable.stderr
    assert "secret" not in unreachable.stderr, "the password is masked"
