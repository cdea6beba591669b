"""The migrations keep the previous release's binaries working on the new schema: the released migrations are
unchanged, and every statement of a new one that could break the previous release (drops, renames, type changes,
new NOT NULL columns, dropped defaults, constraints, triggers, replaced functions or row security) is reviewed in deploy/upgrade/reviewed-migration-changes. The rules themselves
are checked on statements made to break them."""

from __future__ import annotations

import subprocess

import pytest

from conftest import ROOT, previous_release
from migration_compatibility import Finding, findings, reviews

MIGRATIONS = "Shared/IO/PostgresStorage/Migrations"
REVIEWED = ROOT / "deploy" / "upgrade" / "reviewed-migration-changes"


def released_migrations() -> dict[str, bytes]:
    """The previous release's migration files, by name, from the clone's history."""
    _, commit = previous_release()
    names = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", commit, MIGRATIONS + "/"],
                           check=True, capture_output=True, text=True).stdout.split()
    assert names, f"no migrations at {commit}: is it in this clone's history?"
    return {name.rsplit("/", 1)[-1]: subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{name}"],
                                                   check=True, capture_output=True).stdout for name in names}


def test_released_migrations_are_unchanged_and_new_ones_come_after_them():
    released = released_migrations()
    current = {path.name: path.read_bytes() for path in (ROOT / MIGRATIONS).glob("*.sql")}
    assert sorted(set(released) - set(current)) == [], "a released migration is gone"
    changed = sorted(name for name in released if current[name] != released[name])
    assert changed == [], f"released migrations edited (the migrator refuses their checksum): {changed}"
    new = sorted(set(current) - set(released))
    assert all(name > max(released) for name in new), f"new migrations must sort after {max(released)}: {new}"


def test_every_risky_statement_of_a_new_migration_is_reviewed():
    released = released_migrations()
    reviewed = reviews(REVIEWED.read_text())
    used = set()
    unreviewed = []
    for path in sorted((ROOT / MIGRATIONS).glob("*.sql")):
        if path.name in released:
            continue
        for finding in findings(path.read_text()):
            covering = [review for review in reviewed if review.covers(path.name, finding)]
            used.update(covering)
            if not covering:
                unreviewed.append(f"{path.name}: {finding.kind}: {finding.statement[:160]}")
    assert unreviewed == [], "statements that can break the previous release, not reviewed in " \
        f"{REVIEWED.relative_to(ROOT)}:\n" + "\n".join(unreviewed)
    stale = [f"{review.migration} | {review.kind} | {review.excerpt}" for review in reviewed if review not in used]
    assert stale == [], f"reviews that match no statement: {stale}"


@pytest.mark.parametrize("sql, kind", [
    ("ALTER TABLE accounts DROP COLUMN display_name", "drops a column"),
    ("alter table accounts drop display_name", "drops a column"),
    ("ALTER TABLE a ADD COLUMN b int, DROP c", "drops a column"),
    ("DROP TABLE email_codes", "drops an object"),
    ("DROP INDEX passkey_credentials_account_id_idx", "drops an object"),
    ("DROP VIEW v", "drops an object"),
    ("ALTER TABLE accounts RENAME COLUMN display_name TO name", "renames"),
    ("ALTER TABLE accounts RENAME TO users", "renames"),
    ("ALTER TABLE accounts ALTER COLUMN display_name TYPE varchar(10)", "changes a column's type"),
    ("ALTER TABLE accounts ALTER display_name SET DATA TYPE text", "changes a column's type"),
    ("ALTER TABLE accounts ALTER COLUMN display_name SET NOT NULL", "makes a column NOT NULL"),
    ("ALTER TABLE accounts ADD COLUMN tier text NOT NULL", "adds a NOT NULL column without a default"),
    ("ALTER TABLE accounts ALTER COLUMN tier DROP DEFAULT", "drops a column's default"),
    ("ALTER TABLE accounts ADD tier text NOT NULL", "adds a NOT NULL column without a default"),
    ("ALTER TABLE accounts ADD CONSTRAINT c CHECK (length(display_name) < 5)", "adds a rule old writers may break"),
    ("ALTER TABLE accounts ADD UNIQUE (display_name)", "adds a rule old writers may break"),
    ("CREATE UNIQUE INDEX i ON accounts (display_name)", "adds a rule old writers may break"),
    ("ALTER TABLE accounts DROP CONSTRAINT accounts_user_handle_key", "drops a constraint"),
    ("REVOKE INSERT ON accounts FROM passkey", "takes a privilege away"),
    ("CREATE TRIGGER t BEFORE INSERT ON accounts FOR EACH ROW EXECUTE FUNCTION f()", "adds or replaces a trigger"),
    ("CREATE OR REPLACE TRIGGER t AFTER INSERT ON a FOR EACH ROW EXECUTE FUNCTION f()", "adds or replaces a trigger"),
    ("CREATE CONSTRAINT TRIGGER t AFTER INSERT ON a DEFERRABLE FOR EACH ROW EXECUTE FUNCTION f()",
     "adds or replaces a trigger"),
    ("ALTER TABLE accounts ENABLE TRIGGER t", "adds or replaces a trigger"),
    ("CREATE OR REPLACE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$",
     "replaces a function"),
    ("ALTER TABLE accounts ENABLE ROW LEVEL SECURITY", "adds row security"),
    ("CREATE POLICY p ON accounts USING (false)", "adds row security"),
])
def test_each_rule_finds_what_breaks_the_previous_release(sql, kind):
    assert kind in {finding.kind for finding in findings(sql + ";")}


@pytest.mark.parametrize("sql", [
    "ALTER TABLE accounts ADD COLUMN tier text",
    "ALTER TABLE accounts ADD COLUMN tier text NOT NULL DEFAULT 'free'",
    "ALTER TABLE accounts ADD COLUMN n int DEFAULT 0 NOT NULL",
    "CREATE TABLE t (id uuid PRIMARY KEY, name text NOT NULL UNIQUE)",
    "CREATE INDEX i ON accounts (display_name)",
    "ALTER TABLE accounts ALTER COLUMN display_name DROP NOT NULL",
    "-- DROP TABLE accounts; in a comment\nSELECT 1",
    "/* ALTER TABLE a RENAME TO b; */ SELECT 1",
    "COMMENT ON TABLE accounts IS 'DROP TABLE accounts; RENAME'",
    "CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$ BEGIN EXECUTE 'DROP TABLE x'; DROP TABLE y; END $$",
    "CREATE FUNCTION h() RETURNS void LANGUAGE plpgsql AS $$ BEGIN CREATE OR REPLACE TRIGGER t AFTER INSERT ON a "
    "FOR EACH ROW EXECUTE FUNCTION f(); END $$",
    "CREATE FUNCTION g() RETURNS void LANGUAGE sql AS $body$ SELECT 'it''s; DROP' $body$",
])
def test_additive_statements_comments_literals_and_function_bodies_are_not_findings(sql):
    assert findings(sql) == []


def test_statements_are_split_outside_literals_and_bodies():
    sql = "SELECT ';'; CREATE FUNCTION f() AS $$ a; b $$; DROP TABLE t"
    assert [finding.statement for finding in findings(sql)] == ["DROP TABLE t"]
    assert findings(sql) == [Finding("drops an object", "DROP TABLE t")]


def test_a_review_line_must_name_a_rule_and_give_a_reason():
    with pytest.raises(ValueError, match="no rule"):
        reviews("0021_x.sql | deletes everything | DROP TABLE t | because")
    with pytest.raises(ValueError, match="want"):
        reviews("0021_x.sql | drops an object | DROP TABLE t")
    assert reviews("# a comment\n\n0021_x.sql | drops an object | DROP TABLE t | unused since 0.1.0")[0].reason == \
        "unused since 0.1.0"
