"""What in a migration can break the previous release's binaries while they still serve on the new schema (during a
rolling upgrade, and after a rollback of the binaries): pure text rules, no database.

A statement is split out of the file (comments dropped; dollar-quoted bodies and string literals kept whole and not
searched, since they are function bodies and values, not schema changes) and matched against `RULES`. A finding is
allowed only when deploy/upgrade/reviewed-migration-changes names it with the reason the previous release is not
affected."""

from __future__ import annotations

import re
from dataclasses import dataclass

# (kind, pattern over one statement with its literals blanked, whitespace collapsed and upper-cased; None: the rule
# is a function below).
RULES: list[tuple[str, re.Pattern | None]] = [
    ("drops an object", re.compile(
        r"\bDROP (TABLE|VIEW|MATERIALIZED VIEW|TYPE|SCHEMA|FUNCTION|PROCEDURE|TRIGGER|SEQUENCE|DOMAIN|INDEX)\b")),
    ("drops a column", re.compile(r"\bDROP (COLUMN\b|(?!CONSTRAINT\b|NOT NULL\b|DEFAULT\b|IDENTITY\b|EXPRESSION\b)"
                                  r"(?=\w+\s*(,|$)))")),
    ("drops a constraint", re.compile(r"\bDROP CONSTRAINT\b")),
    ("renames", re.compile(r"\bRENAME\b")),
    ("changes a column's type", re.compile(r"\bALTER (COLUMN )?\w+ (SET DATA )?TYPE\b")),
    ("makes a column NOT NULL", re.compile(r"\bSET NOT NULL\b")),
    ("drops a column's default", re.compile(r"\bALTER (COLUMN )?\w+ DROP DEFAULT\b")),
    ("adds a NOT NULL column without a default", None),  # added_columns_without_default
    ("adds a rule old writers may break", re.compile(
        r"\bADD (CONSTRAINT\b|(UNIQUE|CHECK|FOREIGN KEY|PRIMARY KEY|EXCLUDE)\b)|\bCREATE UNIQUE INDEX\b")),
    ("takes a privilege away", re.compile(r"\bREVOKE\b")),
    # What the previous release's own statements would run or meet without naming it.
    ("adds or replaces a trigger", re.compile(
        r"\bCREATE (OR REPLACE )?(CONSTRAINT )?TRIGGER\b|\b(ENABLE|DISABLE) (ALWAYS |REPLICA )?TRIGGER\b")),
    ("replaces a function", re.compile(r"\bCREATE OR REPLACE (FUNCTION|PROCEDURE)\b")),
    ("adds row security", re.compile(r"\bCREATE POLICY\b|\bENABLE ROW LEVEL SECURITY\b|\bFORCE ROW LEVEL SECURITY\b")),
]


@dataclass(frozen=True)
class Finding:
    kind: str
    statement: str  # the statement as written, whitespace collapsed


def statements(sql: str) -> list[tuple[str, str]]:
    """(statement as written, the same with literals blanked) for each statement of SQL, comments dropped."""
    found: list[tuple[str, str]] = []
    written, blanked = [], []
    i = 0
    while i < len(sql):
        if sql.startswith("--", i):
            end = sql.find("\n", i)
            i = len(sql) if end < 0 else end
            continue
        if sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            i = len(sql) if end < 0 else end + 2
            continue
        dollar = re.match(r"\$[A-Za-z_]*\$", sql[i:])
        if dollar:
            tag = dollar.group(0)
            end = sql.find(tag, i + len(tag))
            end = len(sql) if end < 0 else end + len(tag)
            written.append(sql[i:end])
            blanked.append(" $BODY$ ")
            i = end
            continue
        if sql[i] == "'":
            end = i + 1
            while end < len(sql):
                if sql[end] == "'" and sql.startswith("''", end):
                    end += 2
                    continue
                if sql[end] == "'":
                    break
                end += 1
            written.append(sql[i:end + 1])
            blanked.append(" 'TEXT' ")
            i = end + 1
            continue
        if sql[i] == ";":
            found.append(("".join(written), "".join(blanked)))
            written, blanked = [], []
            i += 1
            continue
        written.append(sql[i])
        blanked.append(sql[i])
        i += 1
    found.append(("".join(written), "".join(blanked)))
    return [(" ".join(w.split()), " ".join(b.split()).upper()) for w, b in found if w.strip()]


def added_columns_without_default(blanked: str) -> bool:
    """Whether an `ADD [COLUMN]` clause of an ALTER TABLE says NOT NULL with no DEFAULT: the previous release's
    inserts, which do not name the column, would fail."""
    if not blanked.startswith("ALTER TABLE"):
        return False
    clauses, depth, start = [], 0, 0
    for i, character in enumerate(blanked):
        depth += {"(": 1, ")": -1}.get(character, 0)
        if character == "," and depth == 0:
            clauses.append(blanked[start:i])
            start = i + 1
    clauses.append(blanked[start:])
    for clause in clauses:
        added = re.search(r"\bADD (COLUMN )?(IF NOT EXISTS )?(?!CONSTRAINT\b|UNIQUE\b|CHECK\b|FOREIGN\b|PRIMARY\b)", clause)
        if added and "NOT NULL" in clause[added.end():] and not re.search(r"\bDEFAULT\b", clause[added.end():]):
            return True
    return False


def findings(sql: str) -> list[Finding]:
    """Every statement of SQL that a rule matches, once per rule."""
    return [Finding(kind, written) for written, blanked in statements(sql) for kind, pattern in RULES
            if (pattern.search(blanked) if pattern else added_columns_without_default(blanked))]


@dataclass(frozen=True)
class Review:
    migration: str
    kind: str
    excerpt: str
    reason: str

    def covers(self, migration: str, finding: Finding) -> bool:
        return (self.migration == migration and self.kind == finding.kind
                and self.excerpt.upper() in finding.statement.upper())


def reviews(text: str) -> list[Review]:
    """deploy/upgrade/reviewed-migration-changes: `migration | kind | excerpt of the statement | reason` per line."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = [part.strip() for part in line.split("|")]
        if len(parts) != 4 or not all(parts):
            raise ValueError(f"line {number}: want `migration | kind | excerpt | reason`, got {line!r}")
        if parts[1] not in {kind for kind, _ in RULES}:
            raise ValueError(f"line {number}: no rule is called {parts[1]!r}")
        found.append(Review(*parts))
    return found
