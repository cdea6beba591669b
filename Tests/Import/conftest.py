"""The import suite: the real passkey-import executable against a fresh, migrated database of its own per test on
DATABASE_URL's server, with bcrypt hashes made by Python's bcrypt."""

import functools
import os
import pathlib
import subprocess
import sys
import uuid

import bcrypt
import pytest

TESTS = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "Support" / "python"))

from passkey_stack import BIN, database_url, psql  # noqa: E402

IMPORT = BIN / "passkey-import"


@functools.lru_cache(maxsize=None)
def bcrypt_hash(password):
    """A real bcrypt hash of `password` (cost 4: the import only parses hashes, sign-in verifies them)."""
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode()


class Database:
    """A database of its own with the schema applied; `sql()` returns rows as lists of text."""

    def __init__(self):
        self.server_url = os.environ["DATABASE_URL"]
        self.name = "import_" + uuid.uuid4().hex
        self.url = database_url(self.server_url, self.name)
        subprocess.run(["psql", self.server_url, "-qc", f"CREATE DATABASE {self.name}"], check=True)
        subprocess.run([str(BIN / "passkey-migrate")], env={**os.environ, "DATABASE_URL": self.url}, check=True,
                       capture_output=True)

    def sql(self, statement):
        return psql(self.url, statement)

    def server_sql(self, statement):
        subprocess.run(["psql", self.server_url, "-Atqc", statement], check=True, capture_output=True)

    def state(self):
        """Every imported account's content, without its random identifiers: two databases holding the same
        accounts have equal states."""
        return self.sql(
            """
            SELECT e.normalized_email, e.email, a.display_name, coalesce(a.external_id, '-'), a.created_at,
                   e.verified_at IS NOT NULL, coalesce(p.password_hash, '-'), encode(a.import_digest, 'hex'),
                   e.created_at = a.created_at
            FROM accounts a JOIN account_emails e ON e.account_id = a.id
            LEFT JOIN password_credentials p ON p.account_id = a.id
            WHERE a.import_digest IS NOT NULL
            ORDER BY e.normalized_email
            """)

    def count(self, table):
        return int(self.sql(f"SELECT count(*) FROM {table}")[0][0])

    def imported(self):
        """How many accounts were made by an import."""
        return self.count("accounts WHERE import_digest IS NOT NULL")

    def drop(self):
        subprocess.run(["psql", self.server_url, "-qc", f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)"],
                       capture_output=True)


@pytest.fixture
def database():
    created = Database()
    yield created
    created.drop()


def run_import(arguments, database_url_value, stdin=None, extra_environment=None, cwd=None):
    """Runs passkey-import to the end; returns the completed process (text output)."""
    environment = {**os.environ, **(extra_environment or {})}
    if database_url_value is None:
        environment.pop("DATABASE_URL", None)
    else:
        environment["DATABASE_URL"] = database_url_value
    return subprocess.run([str(IMPORT), *map(str, arguments)], env=environment, input=stdin, capture_output=True,
                          timeout=600, cwd=cwd)


def start_import(arguments, database_url_value):
    """Starts passkey-import without waiting for it."""
    return subprocess.Popen([str(IMPORT), *map(str, arguments)], env={**os.environ, "DATABASE_URL": database_url_value},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
