"""Import inputs made here, with the rejects each one must produce, written out by hand from the rules in
docs/import.md (never read back from the importer)."""

import json

from conftest import bcrypt_hash

PASSWORDS = [f"password number {n}" for n in range(8)]
TAKEN_EMAIL = "taken@example.com"
TAKEN_EXTERNAL_ID = "seeded-ext"


def good_record(n):
    """The record of good line n: every field, with a few left out in turn."""
    record = {"email": f"user{n}@example.com", "displayName": f"User {n}", "externalID": f"ext-{n}",
              "passwordHash": bcrypt_hash(PASSWORDS[n % len(PASSWORDS)]), "createdAt": "2020-01-02T03:04:05Z"}
    if n % 11 == 0:
        del record["passwordHash"]
    if n % 13 == 0:
        del record["displayName"]
    if n % 17 == 0:
        del record["externalID"]
    if n % 7 == 0:
        record["emailVerified"] = True
    if n % 19 == 0:
        record["createdAt"] = "2019-06-30T23:59:59.25+02:00"
    return record


def line_of(record):
    return json.dumps(record, separators=(",", ":")).encode()


def bad_lines():
    """Line number -> (bytes, reason, detail) for each kind of bad line; `detail` None means "checked apart"."""
    long_line = b'{"email":"long@example.com","displayName":"' + b"x" * 20000 + b'"}'
    trailing_comma = b'{"email":"comma@example.com",}'
    bad = {
        17: (b'{"email":"bad\xff@example.com"}', "invalid_utf8", "not valid UTF-8"),
        150: (long_line, "line_too_long", "longer than 16384 bytes"),
        151: (b"not json", "malformed_json", "not one JSON object (stopped at byte 1)"),
        152: (trailing_comma, "malformed_json", f"not one JSON object (stopped at byte {len(trailing_comma)})"),
        300: (b'{"email":"u300@example.com","password":"hunter2"}', "unknown_field", 'unknown member "password"'),
        301: (b'{"email":301}', "wrong_type", "email must be a string"),
        302: (b'{"email":"u302@example.com","emailVerified":"yes"}', "wrong_type",
              "emailVerified must be true or false"),
        400: (b'{"displayName":"Nobody"}', "missing_email", "no email"),
        401: (b'{"email":"not-an-address"}', "invalid_email", "email is not a valid email address"),
        402: (line_of({"email": "e" * 243 + "@example.com"}), "field_too_long", "email is longer than 254 characters"),
        403: (line_of({"email": "u403@example.com", "displayName": "n" * 129}), "field_too_long",
              "displayName is longer than 128 characters"),
        404: (line_of({"email": "u404@example.com", "externalID": "i" * 257}), "field_too_long",
              "externalID is longer than 256 characters"),
        405: (line_of({"email": "u405@example.com", "passwordHash": "$2b$04$" + "a" * 506}), "field_too_long",
              "passwordHash is longer than 512 bytes"),
        406: (line_of({"email": "u406@example.com", "displayName": "\u0007bell"}), "invalid_display_name",
              "displayName is empty or has control characters"),
        407: (line_of({"email": "u407@example.com", "externalID": " spaced"}), "invalid_external_id",
              "externalID has surrounding spaces or control characters"),
        408: (line_of({"email": "u408@example.com", "createdAt": "2021-02-30T00:00:00Z"}), "invalid_created_at",
              "createdAt is not an RFC 3339 date-time"),
        409: (line_of({"email": "u409@example.com", "createdAt": "2999-01-01T00:00:00Z"}), "invalid_created_at",
              "createdAt is before 1970 or in the future"),
        500: (line_of({"email": "u500@example.com", "passwordHash": "md5:5f4dcc3b5aa765d61d8327deb882cf99"}),
              "unknown_hash_format", "passwordHash is in no format this system verifies"),
        501: (line_of({"email": "u501@example.com", "passwordHash": "$2b$04$tooshort"}), "malformed_hash", None),
        502: (line_of({"email": "u502@example.com", "passwordHash": "$2b$31$" + bcrypt_hash("x")[7:]}),
              "malformed_hash", None),
        1010: (line_of(dict(good_record(1005), displayName="Other")), "duplicate_email",
               "the same email is on line 1005"),
        5000: (line_of({"email": "USER10@Example.com"}), "duplicate_email", "the same email is on line 10"),
        7000: (line_of({"email": "u7000@example.com", "externalID": "ext-20"}), "duplicate_external_id",
               "the same externalID is on line 20"),
        8000: (line_of({"email": TAKEN_EMAIL.upper()}), "email_taken", "the email belongs to another account"),
        8001: (line_of({"email": "u8001@example.com", "externalID": TAKEN_EXTERNAL_ID}), "external_id_taken",
               "the externalID belongs to another account"),
        9000: (line_of({"email": " user10@example.com "}), "duplicate_email", "the same email is on line 10"),
        9500: (line_of(good_record(30)), "duplicate_email", "the same email is on line 30"),
    }
    return bad


BLANK_LINES = {600: b"", 601: b"  \t"}


def jsonl_input(total=10_000, bad=True):
    """The bytes of a JSON Lines input of `total` lines, the good lines' numbers and the expected rejects; with
    `bad` false, good lines only."""
    bad = {n: v for n, v in bad_lines().items() if n <= total} if bad else {}
    lines, good = [], []
    for n in range(1, total + 1):
        if n in bad:
            lines.append(bad[n][0])
        elif n in BLANK_LINES and bad:
            lines.append(BLANK_LINES[n])
        else:
            lines.append(line_of(good_record(n)) + (b"\r" if n % 100 == 0 else b""))
            good.append(n)
    rejects = [(n, reason, detail) for n, (_, reason, detail) in sorted(bad.items())]
    return b"\n".join(lines) + b"\n", good, rejects


def seed_taken(database):
    """An account that signed up by itself with TAKEN_EMAIL, and one whose externalID is TAKEN_EXTERNAL_ID."""
    database.sql(f"""
        INSERT INTO accounts (id, display_name, user_handle, external_id) VALUES
            ('00000000-0000-4000-8000-000000000001', 'Taken', '\\x01', NULL),
            ('00000000-0000-4000-8000-000000000002', 'Seeded', '\\x02', '{TAKEN_EXTERNAL_ID}');
        INSERT INTO account_emails (id, account_id, email, normalized_email) VALUES
            ('00000000-0000-4000-8000-000000000011', '00000000-0000-4000-8000-000000000001', '{TAKEN_EMAIL}',
             '{TAKEN_EMAIL}'),
            ('00000000-0000-4000-8000-000000000012', '00000000-0000-4000-8000-000000000002', 'seeded@example.com',
             'seeded@example.com');
        """)
