"""passkey-import end to end: every kind of bad line with the exact rejects file, reruns that change nothing, a run
killed with SIGKILL and one whose database connection is terminated, both finished by running again, CSV, JSON
Lines and standard input, the exit statuses, and bounded memory."""

import os
import re
import signal
import subprocess
import time

import pytest

from conftest import IMPORT, Database, bcrypt_hash, run_import, start_import
from inputs import BLANK_LINES, TAKEN_EMAIL, jsonl_input, seed_taken

EXIT_OK, EXIT_REJECTS, EXIT_USAGE, EXIT_STOPPED = 0, 1, 2, 3


def check_rejects_file(path, expected):
    """The rejects file holds exactly `expected` (line, reason, detail), in line order; a None detail is the hash
    parser's own short reason."""
    lines = path.read_text().splitlines()
    assert len(lines) == len(expected), lines
    for text, (number, reason, detail) in zip(lines, expected):
        if detail is None:
            assert re.fullmatch(rf"{number}\t{reason}\tpasswordHash: [a-z0-9_]+", text), text
        else:
            assert text == f"{number}\t{reason}\t{detail}"


def reason_counts(rejects):
    counts = {}
    for _, reason, _ in rejects:
        counts[reason] = counts.get(reason, 0) + 1
    return counts


def check_summary(stdout, imported, unchanged, rejects, blank=0):
    text = stdout.decode()
    first = f"imported {imported}, skipped as unchanged {unchanged}, rejected {len(rejects)}"
    if blank:
        first += f", blank lines ignored {blank}"
    assert text.splitlines()[0] == first, text
    for reason, count in reason_counts(rejects).items():
        assert f"  rejected {reason}: {count}\n" in text, (reason, text)
    assert text.count("  rejected ") == len(reason_counts(rejects)), text


def no_crash(stderr):
    text = stderr.decode()
    for sign in ["Fatal error", "Stack dump", "backtrace", "Segmentation", "Illegal instruction", "0x0000"]:
        assert sign not in text, text
    return text


@pytest.fixture(scope="module")
def ten_thousand(tmp_path_factory):
    data, good, rejects = jsonl_input()
    path = tmp_path_factory.mktemp("input") / "users.jsonl"
    path.write_bytes(data)
    return path, good, rejects


def test_ten_thousand_lines_with_every_kind_of_bad_line_then_a_rerun_that_changes_nothing(database, ten_thousand):
    path, good, rejects = ten_thousand
    seed_taken(database)
    assert {reason for _, reason, _ in rejects} >= {
        "invalid_utf8", "line_too_long", "malformed_json", "unknown_field", "wrong_type", "missing_email",
        "invalid_email", "field_too_long", "invalid_display_name", "invalid_external_id", "invalid_created_at",
        "unknown_hash_format", "malformed_hash", "duplicate_email", "duplicate_external_id", "email_taken",
        "external_id_taken"}
    first = run_import(["--batch-size", "1000", path], database.url)
    assert first.returncode == EXIT_REJECTS, first.stderr
    no_crash(first.stderr)
    check_summary(first.stdout, len(good), 0, rejects, blank=len(BLANK_LINES))
    rejects_path = path.with_name("users.jsonl.rejects")
    assert f"rejected lines and reasons are in {rejects_path}" in first.stdout.decode()
    check_rejects_file(rejects_path, rejects)
    assert oct(rejects_path.stat().st_mode & 0o777) == "0o600"

    # Every good line is one account with its email, its password when it had one, and its import record; the
    # rejected ones left nothing.
    assert database.imported() == len(good)
    assert database.count("accounts") == len(good) + 2
    assert database.count("account_emails") == len(good) + 2
    assert database.count("password_credentials") == len([n for n in good if n % 11 != 0])
    assert database.sql("SELECT count(*) FROM account_emails WHERE normalized_email LIKE 'u4%' OR "
                        "normalized_email LIKE 'u5%' OR normalized_email LIKE 'u3%'") == [["0"]]
    [row] = database.sql("""
        SELECT a.display_name, a.external_id, a.created_at, e.email, e.verified_at, p.password_hash,
               substr(a.id::text, 15, 1)
        FROM accounts a JOIN account_emails e ON e.account_id = a.id JOIN password_credentials p ON p.account_id = a.id
        WHERE e.normalized_email = 'user7@example.com'""")
    # Imported accounts get time-ordered IDs (UUIDv7).
    assert row == ["User 7", "ext-7", "2020-01-02 03:04:05+00", "user7@example.com", "2020-01-02 03:04:05+00",
                   bcrypt_hash("password number 7"), "7"]
    # Defaults: the email's local part as name, no externalID, no password, the offset applied to createdAt.
    assert database.sql("""
        SELECT a.display_name, coalesce(a.external_id, '-'), a.created_at, e.verified_at IS NULL,
               NOT EXISTS (SELECT 1 FROM password_credentials p WHERE p.account_id = a.id)
        FROM accounts a JOIN account_emails e ON e.account_id = a.id
        WHERE e.normalized_email = 'user2431@example.com'""") == [
        ["user2431", "-", "2020-01-02 03:04:05+00", "t", "t"]]
    assert database.sql("SELECT created_at FROM accounts WHERE external_id = 'ext-38'") == [
        ["2019-06-30 21:59:59.25+00"]]
    # The line with a CRLF ending is imported like the others.
    assert database.sql("SELECT display_name FROM accounts a JOIN account_emails e ON e.account_id = a.id "
                        "WHERE normalized_email = 'user700@example.com'") == [["User 700"]]

    before = database.state()
    second = run_import(["--batch-size", "1000", path], database.url)
    assert second.returncode == EXIT_REJECTS, second.stderr
    check_summary(second.stdout, 0, len(good), rejects, blank=len(BLANK_LINES))
    assert "nothing changed" in second.stdout.decode()
    check_rejects_file(rejects_path, rejects)
    assert database.state() == before
    assert database.count("accounts") == len(good) + 2


def test_a_clean_input_exits_zero_and_its_rerun_says_nothing_changed(database, tmp_path):
    data, good, _ = jsonl_input(100, bad=False)
    path = tmp_path / "clean.ndjson"
    path.write_bytes(data)
    first = run_import([path], database.url)
    assert first.returncode == EXIT_OK, first.stdout + first.stderr
    check_summary(first.stdout, 100, 0, [])
    assert not path.with_name("clean.ndjson.rejects").exists()
    again = run_import([path], database.url)
    assert again.returncode == EXIT_OK
    check_summary(again.stdout, 0, 100, [])
    assert "nothing changed: every accepted line was imported already" in again.stdout.decode()


@pytest.fixture(scope="module")
def forty_thousand(tmp_path_factory):
    """A 40,000-line input and the state a single uninterrupted run leaves."""
    data, good, rejects = jsonl_input(40_000)
    path = tmp_path_factory.mktemp("input") / "many.jsonl"
    path.write_bytes(data)
    reference = Database()
    seed_taken(reference)
    finished = run_import(["--batch-size", "500", path], reference.url)
    assert finished.returncode == EXIT_REJECTS, finished.stderr
    state = reference.state()
    rejects_text = path.with_name("many.jsonl.rejects").read_text()
    reference.drop()
    yield path, good, rejects, state, rejects_text


def wait_for_rows(database, process, minimum):
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, "the import finished before it could be interrupted"
        if database.imported() >= minimum:
            return
        time.sleep(0.05)
    raise AssertionError("the import wrote nothing")


def test_a_run_killed_midway_is_finished_by_running_it_again(database, forty_thousand, tmp_path):
    path, good, rejects, reference_state, reference_rejects = forty_thousand
    seed_taken(database)
    rejects_path = tmp_path / "killed.rejects"
    process = start_import(["--batch-size", "500", "--rejects", rejects_path, path], database.url)
    wait_for_rows(database, process, 2000)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    partial = database.imported()
    assert 2000 <= partial < len(good)
    # Nothing is half-written: every imported account has its email and its import record.
    assert database.count("accounts") - 2 == partial == database.count("account_emails") - 2

    resumed = run_import(["--batch-size", "500", "--rejects", rejects_path, path], database.url)
    assert resumed.returncode == EXIT_REJECTS, resumed.stderr
    text = resumed.stdout.decode()
    imported, unchanged = map(int, re.match(r"imported (\d+), skipped as unchanged (\d+)", text).groups())
    assert unchanged >= partial and imported + unchanged == len(good), text
    assert database.state() == reference_state
    assert rejects_path.read_text() == reference_rejects


def test_a_database_connection_lost_midway_stops_with_a_message_and_the_next_run_finishes(
        database, forty_thousand, tmp_path):
    path, good, rejects, reference_state, reference_rejects = forty_thousand
    seed_taken(database)
    rejects_path = tmp_path / "lost.rejects"
    process = start_import(["--batch-size", "500", "--rejects", rejects_path, path], database.url)
    wait_for_rows(database, process, 1000)
    database.server_sql(
        f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{database.name}' "
        "AND application_name = 'passkey-import'")
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == EXIT_STOPPED, stderr
    message = no_crash(stderr)
    assert re.search(r"passkey-import: the database connection was lost \(.+\) while writing lines \d+-\d+; "
                     r"lines up to \d+ are written; lines from \d+ on are not\. "
                     r"Run the same command again to finish\.", message), message
    assert "stopped before the end of the input" in message
    partial = database.imported()
    assert database.count("accounts") - 2 == partial

    resumed = run_import(["--batch-size", "500", "--rejects", rejects_path, path], database.url)
    assert resumed.returncode == EXIT_REJECTS, resumed.stderr
    assert database.state() == reference_state
    assert rejects_path.read_text() == reference_rejects


def test_an_unreachable_database_stops_before_anything_is_read(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"email":"a@example.com"}\n')
    missing = f"postgresql:///postgres?host={tmp_path}/no-server&user=postgres"
    result = run_import([path], missing)
    assert result.returncode == EXIT_STOPPED
    message = no_crash(result.stderr)
    assert message.startswith(
        "passkey-import: cannot reach the database (DATABASE_URL): cannot connect to the database at ")
    assert "Nothing was imported." in message


CSV_HEADER = "externalID,email,passwordHash,displayName,createdAt,emailVerified"


def test_csv_with_quoting_and_its_own_bad_rows(database, tmp_path):
    hash_ = bcrypt_hash("csv password")
    rows = [
        CSV_HEADER,
        f'c-1,csv1@example.com,{hash_},"Lovelace, Ada ""Countess""",2021-01-01T00:00:00Z,true',
        "c-2,csv2@example.com,,,,",
        "c-3,csv3@example.com,,Too Few",
        "c-4,csv4@example.com,,Ada,,false,extra",
        'c-5,csv5@example.com,,"unclosed,,',
        'c-6,csv6@example.com,,Ad"a,,',
        "c-7,csv7@example.com,,Ada,,yes",
        '"c-8","csv8@example.com","","","",""',
        ",CSV1@EXAMPLE.COM,,,,",
    ]
    path = tmp_path / "users.csv"
    path.write_text("\r\n".join(rows) + "\r\n")
    result = run_import([path], database.url)
    assert result.returncode == EXIT_REJECTS, result.stderr
    expected = [
        (4, "wrong_field_count", "4 fields where the header has 6"),
        (5, "wrong_field_count", "7 fields where the header has 6"),
        (6, "malformed_csv", "a quoted value is not closed"),
        (7, "malformed_csv", "a quote inside an unquoted value"),
        (8, "invalid_email_verified", "emailVerified must be true or false"),
        (10, "duplicate_email", "the same email is on line 2"),
    ]
    check_summary(result.stdout, 3, 0, expected)
    check_rejects_file(path.with_name("users.csv.rejects"), expected)
    assert database.sql("""
        SELECT a.external_id, a.display_name, a.created_at, e.verified_at IS NOT NULL, p.password_hash
        FROM accounts a JOIN account_emails e ON e.account_id = a.id
        LEFT JOIN password_credentials p ON p.account_id = a.id ORDER BY a.external_id""") == [
        ["c-1", 'Lovelace, Ada "Countess"', "2021-01-01 00:00:00+00", "t", hash_],
        ["c-2", "csv2", database.sql("SELECT created_at FROM accounts WHERE external_id = 'c-2'")[0][0], "f", ""],
        ["c-8", "csv8", database.sql("SELECT created_at FROM accounts WHERE external_id = 'c-8'")[0][0], "f", ""],
    ]


@pytest.mark.parametrize("header, message", [
    ("email,password", 'the header row names "password", which is not one of'),
    ("displayName", "the header row has no email column"),
    ("email,email", "the header row names email twice"),
])
def test_a_csv_header_that_cannot_be_read_refuses_the_whole_input(database, tmp_path, header, message):
    path = tmp_path / "bad.csv"
    path.write_text(header + "\na@example.com,x\n")
    result = run_import([path], database.url)
    assert result.returncode == EXIT_USAGE
    assert message in no_crash(result.stderr)
    assert database.count("accounts") == 0


def test_standard_input_and_the_same_records_from_a_file_are_one_import(database, tmp_path):
    data, good, rejects = jsonl_input(120)
    result = run_import(["--format", "jsonl", "-"], database.url, stdin=data, cwd=tmp_path)
    assert result.returncode == EXIT_REJECTS, result.stderr
    check_summary(result.stdout, len(good), 0, rejects)
    check_rejects_file(tmp_path / "stdin.rejects", rejects)
    path = tmp_path / "same.jsonl"
    path.write_bytes(data)
    again = run_import([path], database.url)
    check_summary(again.stdout, 0, len(good), rejects)
    csv = run_import(["--format", "csv", "-"], database.url, stdin=b"email\nstdin-csv@example.com\n", cwd=tmp_path)
    assert csv.returncode == EXIT_OK, csv.stderr
    assert database.sql("SELECT display_name FROM accounts a JOIN account_emails e ON e.account_id = a.id "
                        "WHERE normalized_email = 'stdin-csv@example.com'") == [["stdin-csv"]]


@pytest.mark.parametrize("arguments, message", [
    ([], "no input file"),
    (["users.txt"], "cannot tell the format from the file name"),
    (["-"], "--format is required for standard input"),
    (["--format", "xml", "a.jsonl"], "--format must be jsonl or csv"),
    (["--batch-size", "0", "a.jsonl"], "--batch-size must be a number from 1 to 10000"),
    (["--bogus", "a.jsonl"], "unknown option --bogus"),
    (["/nonexistent/users.jsonl"], "cannot open /nonexistent/users.jsonl"),
])
def test_bad_usage_exits_two_with_a_message(database, arguments, message):
    result = run_import(arguments, database.url)
    assert result.returncode == EXIT_USAGE
    assert message in no_crash(result.stderr)


def test_the_rejects_file_cannot_be_the_input(database, tmp_path):
    path = tmp_path / "users.jsonl"
    path.write_text('{"email":"a@example.com"}\n')
    result = run_import(["--rejects", tmp_path / "." / "users.jsonl", path], database.url)
    assert result.returncode == EXIT_USAGE
    assert "is the input itself" in no_crash(result.stderr)
    assert path.read_text() == '{"email":"a@example.com"}\n'


def test_help_prints_the_usage():
    result = subprocess.run([str(IMPORT), "--help"], capture_output=True, text=True)
    assert result.returncode == EXIT_OK
    assert result.stdout.startswith("usage: passkey-import [--format jsonl|csv]")


def test_without_database_url_it_uses_the_run_commands_local_database(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"email":"a@example.com"}\n')
    empty = tmp_path / "data"
    empty.mkdir()
    missing = run_import([path], None, extra_environment={"PASSKEY_DATA_DIR": str(empty)})
    assert missing.returncode == EXIT_USAGE
    assert ("DATABASE_URL is not set and the local database of deploy/local/run is not running"
            in missing.stderr.decode())
    not_a_directory = run_import([path], None, extra_environment={"PASSKEY_DATA_DIR": str(path)})
    assert not_a_directory.returncode == EXIT_USAGE
    assert "PASSKEY_DATA_DIR" in not_a_directory.stderr.decode()
    # The test server's socket directory stands in for deploy/local/run's: its `postgres` database is reached, and
    # refused because no migrations were applied to it.
    socket_directory = re.search(r"host=([^&]+)", os.environ["DATABASE_URL"])
    if not socket_directory:
        pytest.skip("DATABASE_URL does not name a unix socket directory")
    found = run_import([path], None, extra_environment={"PASSKEY_DATA_DIR": socket_directory.group(1)})
    assert found.returncode == EXIT_USAGE, found.stderr
    assert "run passkey-migrate first" in found.stderr.decode()


def peak_memory_kib(arguments, url):
    process = subprocess.Popen([str(IMPORT), *map(str, arguments)], env={**os.environ, "DATABASE_URL": url},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss, process.returncode


def test_memory_does_not_grow_with_the_input(database, tmp_path):
    small = tmp_path / "small.jsonl"
    small.write_bytes(b"".join(b'{"email":"small%d@example.com"}\n' % n for n in range(10)))
    large = tmp_path / "large.jsonl"
    large.write_bytes(b"".join(b'{"email":"large%d@example.com","externalID":"%d"}\n' % (n, n) for n in range(60_000)))
    huge_line = tmp_path / "huge-line.jsonl"
    with open(huge_line, "wb") as out:
        out.write(b'{"email":"a@example.com","displayName":"')
        for _ in range(64):
            out.write(b"x" * (1 << 20))
        out.write(b'"}\n{"email":"after-the-huge-line@example.com"}\n')
    small_peak, status = peak_memory_kib([small], database.url)
    assert status == EXIT_OK
    large_peak, status = peak_memory_kib([large], database.url)
    assert status == EXIT_OK
    huge_peak, status = peak_memory_kib([huge_line], database.url)
    assert status == EXIT_REJECTS
    assert database.count("accounts") == 60_011
    assert huge_line.with_name("huge-line.jsonl.rejects").read_text() == "1\tline_too_long\tlonger than 16384 bytes\n"
    # 60,000 lines (12 batches) hold no more than 10 do, give or take the batch buffers; a 64 MiB line is never held.
    assert large_peak - small_peak < 12 * 1024, (small_peak, large_peak)
    assert huge_peak - small_peak < 12 * 1024, (small_peak, huge_peak)


def test_on_a_terminal_the_progress_is_a_bar_with_rate_and_eta(database, tmp_path):
    import pty
    data, good, _ = jsonl_input(3_000, bad=False)
    path = tmp_path / "tty.jsonl"
    path.write_bytes(data)
    controller, terminal = pty.openpty()
    process = subprocess.Popen([str(IMPORT), "--batch-size", "500", str(path)],
                               env={**os.environ, "DATABASE_URL": database.url}, stdout=subprocess.PIPE,
                               stderr=terminal)
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    stdout, _ = process.communicate(timeout=120)
    os.close(controller)
    assert process.returncode == EXIT_OK, stdout
    # The finished bar, drawn in place, then cleared for the summary (which goes to standard output).
    assert re.search(rb"\r\[#{30}\] 100%  3000 lines  \d+ lines/s  ETA 0:00\x1b\[K", shown), shown
    assert shown.endswith(b"\r\x1b[K"), shown
    assert stdout.decode().startswith("imported 3000, skipped as unchanged 0, rejected 0")


def test_sigterm_midway_says_how_to_finish_and_the_rerun_does(database, tmp_path):
    data, good, _ = jsonl_input(30_000, bad=False)
    path = tmp_path / "term.jsonl"
    path.write_bytes(data)
    process = start_import(["--batch-size", "500", path], database.url)
    wait_for_rows(database, process, 1000)
    process.terminate()
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == EXIT_STOPPED
    assert "passkey-import: interrupted; the batches written so far stay. Run the same command again to finish." in (
        no_crash(stderr))
    resumed = run_import([path], database.url)
    assert resumed.returncode == EXIT_OK, resumed.stderr
    assert database.imported() == 30_000
