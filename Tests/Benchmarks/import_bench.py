"""passkey-import against the floor of Postgres's own COPY, run by Tests/Benchmarks/import-bench (which sets up
DATABASE_URL, the venv and PASSKEY_BIN_DIR).

The input is ACCOUNTS JSON Lines records with every field: a unique email, a display name, an externalID, a
createdAt and a bcrypt hash from a pool of POOL made here by Python's bcrypt (cost 10). The importer only reads the
hashes' format; nothing is verified. The floor is the same rows, as COPY text made here (time-ordered IDs as the
importer makes them), written by one psql session with three `\\copy` commands in one transaction into the same
three tables (accounts, account_emails, password_credentials) of a second fresh database with the same schema,
indexes, constraints and triggers."""

import json
import os
import pathlib
import random
import subprocess
import sys
import time
import uuid

import bcrypt

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "Support" / "python"))

from passkey_stack import database_url  # noqa: E402

BIN = pathlib.Path(os.environ["PASSKEY_BIN_DIR"])
ACCOUNTS = int(os.environ.get("ACCOUNTS", "1000000"))
POOL = int(os.environ.get("POOL", "300"))


def time_ordered_uuid(rng, n):
    """A UUIDv7 as the importer makes them: 48 bits of milliseconds (a few dozen rows per millisecond), then random."""
    milliseconds = 1_764_000_000_000 + n // 50
    return str(uuid.UUID(int=(milliseconds << 80) | (0x7 << 76) | (rng.getrandbits(62) | (0b10 << 62)) |
                         (rng.getrandbits(12) << 64)))


def fresh_database(server, name):
    subprocess.run(["psql", server, "-qc", f"DROP DATABASE IF EXISTS {name}"], check=True, capture_output=True)
    subprocess.run(["psql", server, "-qc", f"CREATE DATABASE {name}"], check=True)
    url = database_url(server, name)
    subprocess.run([str(BIN / "passkey-migrate")], env={**os.environ, "DATABASE_URL": url}, check=True,
                   capture_output=True)
    return url


def count(url, table):
    out = subprocess.run(["psql", url, "-Atqc", f"SELECT count(*) FROM {table}"], check=True, capture_output=True,
                         text=True)
    return int(out.stdout)


def main(work):
    work = pathlib.Path(work)
    server = os.environ["DATABASE_URL"]
    started = time.monotonic()
    hashes = [bcrypt.hashpw(f"password {n}".encode(), bcrypt.gensalt(10)).decode() for n in range(POOL)]
    print(f"{POOL} bcrypt hashes (cost 10) made in {time.monotonic() - started:.1f} s")

    source = work / "accounts.jsonl"
    tables = {name: open(work / f"{name}.copy", "w") for name in
              ("accounts", "account_emails", "password_credentials")}
    rng = random.Random(1)
    with open(source, "w") as out:
        for n in range(ACCOUNTS):
            email = f"user{n}@bench.example.com"
            created = f"20{10 + n % 15}-0{1 + n % 9}-1{n % 10}T0{n % 10}:1{n % 10}:2{n % 10}Z"
            record = {"email": email, "displayName": f"User {n}", "passwordHash": hashes[n % POOL],
                      "externalID": f"legacy-{n}", "createdAt": created}
            out.write(json.dumps(record, separators=(",", ":")) + "\n")
            account, email_id = time_ordered_uuid(rng, n), time_ordered_uuid(rng, n)
            handle = rng.getrandbits(256).to_bytes(32, "big").hex()
            digest = rng.getrandbits(256).to_bytes(32, "big").hex()
            tables["accounts"].write(f"{account}\tUser {n}\t\\\\x{handle}\t{created}\tlegacy-{n}\t\\\\x{digest}\n")
            tables["account_emails"].write(f"{email_id}\t{account}\t{email}\t{email}\t{created}\t\\N\n")
            tables["password_credentials"].write(f"{account}\t{hashes[n % POOL]}\t{created}\t{created}\n")
    for file in tables.values():
        file.close()
    size = source.stat().st_size
    print(f"input: {ACCOUNTS} accounts, {size / 1e6:.0f} MB of JSON Lines")

    target = fresh_database(server, "import_bench_importer")
    started = time.monotonic()
    process = subprocess.Popen([str(BIN / "passkey-import"), str(source)], env={**os.environ, "DATABASE_URL": target},
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.monotonic() - started
    summary = process.stdout.read().decode()
    assert os.waitstatus_to_exitcode(status) == 0, summary
    imported = count(target, "accounts WHERE import_digest IS NOT NULL")
    assert imported == ACCOUNTS == count(target, "password_credentials")
    cpu = usage.ru_utime + usage.ru_stime
    print(f"passkey-import: {elapsed:.1f} s, {ACCOUNTS / elapsed:,.0f} rows/s, importer CPU {cpu:.1f} s "
          f"(user {usage.ru_utime:.1f}, system {usage.ru_stime:.1f}), peak memory {usage.ru_maxrss / 1024:.0f} MiB")
    print("  " + summary.splitlines()[0])

    floor = fresh_database(server, "import_bench_copy")
    script = "BEGIN;\n" + "".join(
        f"\\copy {name} ({columns}) FROM '{work / (name + '.copy')}'\n" for name, columns in [
            ("accounts", "id, display_name, user_handle, created_at, external_id, import_digest"),
            ("account_emails", "id, account_id, email, normalized_email, created_at, verified_at"),
            ("password_credentials", "account_id, password_hash, created_at, updated_at"),
        ]) + "COMMIT;\n"
    started = time.monotonic()
    subprocess.run(["psql", floor, "-q", "-v", "ON_ERROR_STOP=1"], input=script.encode(), check=True)
    floor_elapsed = time.monotonic() - started
    assert count(floor, "password_credentials") == ACCOUNTS
    print(f"floor, psql COPY of the same rows into the same tables: {floor_elapsed:.1f} s, "
          f"{ACCOUNTS / floor_elapsed:,.0f} rows/s")
    print(f"ratio passkey-import / COPY: {elapsed / floor_elapsed:.2f}")
    for name in ("import_bench_importer", "import_bench_copy"):
        subprocess.run(["psql", server, "-qc", f"DROP DATABASE IF EXISTS {name}"], capture_output=True)


if __name__ == "__main__":
    main(sys.argv[1])
