"""passkey-admin's commands over the admin API, against the real stack's admin listener: every command's table and
--json output, the documented exit statuses (no token, a wrong scope, an unknown account, a rule, bad options, an
unreachable or https address), and the token never printed."""

import json
import os
import subprocess
import sys
import time
import uuid

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from test_admin_api import Admin, make_token, passkey_only_account, password_account  # noqa: E402
from passkey_stack import BIN, Stack, free_port  # noqa: E402

SEEN_TOKENS = set()


@pytest.fixture(scope="module")
def stack():
    admin_port = free_port()
    the_stack = Stack("admincli", environment={
        "ADMIN_LISTEN": f"127.0.0.1:{admin_port}", "PASSKEY_TRUSTED_PROXIES": "127.0.0.1",
        "PASSKEY_RATE_LIMIT_ADMIN_PER_ADDRESS": "0",
        "PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL": "0",
        "PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_START_PER_ADDRESS": "0",
        "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "0"}).start()
    the_stack.admin = Admin(admin_port)
    yield the_stack
    exited = the_stack.exited()
    log = the_stack.log_text()
    the_stack.stop()
    assert not exited, log
    for token in SEEN_TOKENS:
        assert token not in log


@pytest.fixture(scope="module")
def tokens(stack):
    made = {"read": make_token(stack, "read"), "write": make_token(stack, "write"),
            "all": make_token(stack, "read,write,erase")}
    SEEN_TOKENS.update(made.values())
    return made


def cli(stack, *arguments, token=None, url=None):
    """passkey-admin with the admin listener's address and `token`; no DATABASE_URL, so nothing but the API is used.
    Whatever it prints never contains a token."""
    environment = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    environment["PASSKEY_ADMIN_URL"] = url or stack.admin.base
    environment.pop("PASSKEY_ADMIN_TOKEN", None)
    if token is not None:
        environment["PASSKEY_ADMIN_TOKEN"] = token
        if len(token) >= 8:
            SEEN_TOKENS.add(token)
    result = subprocess.run([BIN / "passkey-admin", *arguments], env=environment, capture_output=True, text=True,
                            timeout=60)
    printed = result.stdout + result.stderr
    for seen in SEEN_TOKENS:
        assert seen not in printed, arguments
        # Nor its secret part alone.
        parts = seen.split("_", 2)
        assert len(parts) < 3 or parts[2] not in printed, arguments
    return result


def ok(result):
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    assert result.stderr == ""
    return result.stdout


def refused(result, status, fragment):
    assert result.returncode == status, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines and lines[0].startswith("passkey-admin: "), result.stderr
    assert fragment in result.stderr, result.stderr
    return result.stderr


def table(text):
    """A printed table as (header, rows), each row cut at the header's column starts: the columns line up."""
    lines = text.rstrip("\n").splitlines()
    header = lines[0]
    starts = [index for index in range(len(header)) if header[index] != " " and (index == 0 or header[index - 2:index] == "  ")]
    def cut(line):
        return [line[start:end].strip() for start, end in zip(starts, starts[1:] + [None])]
    return cut(header), [cut(line) for line in lines[1:]]


def test_find_and_show_as_tables_and_as_the_apis_json(stack, tokens):
    address, account_id, _, credential_id = password_account(stack)
    by_email = ok(cli(stack, "accounts", "find", "--email", address.upper(), token=tokens["read"]))
    header, rows = table(by_email)
    assert header == ["ACCOUNT ID", "DISPLAY NAME", "CREATED", "PASSWORD", "PASSKEYS", "STATE", "EMAILS"]
    assert [(row[0], row[1], row[3], row[4], row[5], row[6]) for row in rows] == [
        (account_id, "Ada", "yes", "1", "enabled", address)]
    for option, value in [("--account-id", account_id.upper()), ("--credential-id", credential_id)]:
        found = json.loads(ok(cli(stack, "accounts", "find", option, value, "--json", token=tokens["read"])))
        assert found == stack.admin.json("GET", f"/admin/v1/accounts?accountID={account_id}", tokens["read"])
    none = ok(cli(stack, "accounts", "find", "--email", "nobody@example.com", token=tokens["read"]))
    assert none.strip() == "no account found"
    assert json.loads(ok(cli(stack, "accounts", "find", "--email", "nobody@example.com", "--json",
                             token=tokens["read"]))) == {"accounts": []}

    shown = json.loads(ok(cli(stack, "account", "show", account_id, "--json", token=tokens["read"])))
    assert shown == stack.admin.json("GET", f"/admin/v1/accounts/{account_id}", tokens["read"])
    text = ok(cli(stack, "account", "show", account_id, token=tokens["read"]))
    sections = text.strip().split("\n\n")
    assert len(sections) == 4, text
    header, rows = table(sections[0])
    assert header[:2] == ["ACCOUNT ID", "DISPLAY NAME"] and rows[0][:2] == [account_id, "Ada"]
    assert rows[0][3:] == ["-", "password,passkey", "0"]
    assert table(sections[1]) == (["EMAIL", "VERIFIED"], [[address, "no"]])
    header, rows = table(sections[2])
    assert header[:2] == ["CREDENTIAL ID", "NAME"] and [row[0] for row in rows] == [credential_id]
    header, rows = table(sections[3])
    assert header == ["SESSION ID", "METHOD", "CREATED", "EXPIRES"]
    assert sorted(row[0] for row in rows) == sorted(session["sessionID"] for session in shown["sessions"])
    assert {row[1] for row in rows} == {"password"}


def test_revoke_sessions_and_remove_a_passkey(stack, tokens):
    _, account_id, sessions, credential_id = password_account(stack)
    first = stack.request("GET", "/v1/session", token=sessions[0]).json()["sessionID"]
    out = ok(cli(stack, "sessions", "revoke", account_id, first, token=tokens["write"]))
    assert out.strip() == f"revoked session {first} of account {account_id}"
    assert stack.request("GET", "/v1/session", token=sessions[0]).status == 401
    assert stack.request("GET", "/v1/session", token=sessions[1]).status == 200
    refused(cli(stack, "sessions", "revoke", account_id, first, token=tokens["write"]), 3, "404 not_found")
    assert json.loads(ok(cli(stack, "sessions", "revoke", account_id, "--json", token=tokens["write"]))) == \
        {"revoked": 1}
    assert stack.request("GET", "/v1/session", token=sessions[1]).status == 401
    assert ok(cli(stack, "sessions", "revoke", account_id, token=tokens["write"])).strip() == \
        f"revoked 0 live session(s) of account {account_id}"

    refused(cli(stack, "passkey", "remove", account_id, credential_id, token=tokens["read"]), 4, "403 forbidden")
    out = ok(cli(stack, "passkey", "remove", account_id, credential_id, token=tokens["write"]))
    assert out.strip() == f"removed passkey {credential_id} from account {account_id}"
    assert stack.admin.json("GET", f"/admin/v1/accounts/{account_id}", tokens["read"])["passkeys"] == []
    refused(cli(stack, "passkey", "remove", account_id, credential_id, token=tokens["write"]), 3, "404 not_found")


def test_the_last_passkey_goes_only_with_the_override(stack, tokens):
    account_id, credential_id = passkey_only_account(stack)
    message = refused(cli(stack, "passkey", "remove", account_id, credential_id, token=tokens["write"]), 5,
                      "409 last_sign_in_method")
    assert len(message.strip().splitlines()) == 1
    removed = json.loads(ok(cli(stack, "passkey", "remove", account_id, credential_id,
                                "--override-last-sign-in-method", "--json", token=tokens["write"])))
    assert removed == {"removed": credential_id, "accountID": account_id, "override": True}
    events = stack.admin.json("GET", f"/admin/v1/audit-events?accountID={account_id}&type=audit.passkey.removed",
                              tokens["read"])["events"]
    assert len(events) == 1 and events[0]["detail"]["override"] == "last_sign_in_method"
    assert events[0]["actorID"] == tokens["write"].split("_")[1]


def test_disable_enable_and_erase(stack, tokens):
    address, account_id, sessions, _ = password_account(stack, passkey=False)
    refused(cli(stack, "account", "disable", account_id, token=tokens["read"]), 4, "403 forbidden")
    out = ok(cli(stack, "account", "disable", account_id, token=tokens["write"]))
    assert out.strip() == f"disabled account {account_id}; revoked 2 live session(s)"
    assert all(stack.request("GET", "/v1/account", token=token).status == 401 for token in sessions)
    assert json.loads(ok(cli(stack, "account", "disable", account_id, "--json", token=tokens["write"]))) == \
        {"disabled": True, "changed": False, "sessionsRevoked": 0}
    assert ok(cli(stack, "account", "disable", account_id, token=tokens["write"])).strip() == \
        f"account {account_id} was already disabled"
    shown = ok(cli(stack, "account", "show", account_id, token=tokens["read"]))
    assert table(shown.split("\n\n")[0])[1][0][3] != "-"
    assert ok(cli(stack, "account", "enable", account_id, token=tokens["write"])).strip() == \
        f"enabled account {account_id}"
    assert stack.admin.json("GET", f"/admin/v1/accounts/{account_id}", tokens["read"])["disabledAt"] is None

    refused(cli(stack, "account", "erase", account_id, token=tokens["all"]), 2, "--yes")
    assert stack.admin.call("GET", f"/admin/v1/accounts/{account_id}", tokens["read"])[0] == 200
    refused(cli(stack, "account", "erase", account_id, "--yes", token=tokens["write"]), 4, "403 forbidden")
    assert json.loads(ok(cli(stack, "account", "erase", account_id, "--yes", "--json", token=tokens["all"]))) == \
        {"erased": account_id}
    refused(cli(stack, "account", "show", account_id, token=tokens["read"]), 3, "404 not_found")
    refused(cli(stack, "account", "erase", account_id, "--yes", token=tokens["all"]), 3, "404")
    assert stack.request("POST", "/v1/sessions/password", {"email": address, "password": "admin suite password"}) \
        .status == 401


def test_reset_password_voids_it_ends_the_sessions_and_needs_a_verified_address(stack, tokens):
    address, account_id, sessions, _ = password_account(stack, passkey=False)
    # No verified address: refused, nothing changed.
    refused(cli(stack, "account", "reset-password", account_id, token=tokens["write"]), 5, "409 conflict")
    assert stack.request("GET", "/v1/account", token=sessions[0]).status == 200
    stack.sql(f"UPDATE account_emails SET verified_at = now() WHERE email = '{address}'")
    refused(cli(stack, "account", "reset-password", account_id, token=tokens["read"]), 4, "403 forbidden")
    out = ok(cli(stack, "account", "reset-password", account_id, token=tokens["write"]))
    assert out.strip() == (f"reset account {account_id}: voided its password; revoked 2 live session(s); "
                           f"recovery code sent to {address}")
    assert all(stack.request("GET", "/v1/account", token=token).status == 401 for token in sessions)
    assert stack.request("POST", "/v1/sessions/password", {"email": address, "password": "admin suite password"}) \
        .status == 401
    again = json.loads(ok(cli(stack, "account", "reset-password", account_id, "--json", token=tokens["write"])))
    assert again == {"passwordVoided": False, "sessionsRevoked": 0, "sentTo": address}
    events = stack.admin.json("GET", f"/admin/v1/audit-events?accountID={account_id}&type=audit.password.reset",
                              tokens["read"])["events"]
    assert [event["detail"]["password_voided"] for event in events] == ["false", "true"]


def test_audit_events_with_filters_and_pages(stack, tokens):
    _, account_id, _, _ = password_account(stack, passkey=False)
    everything = json.loads(ok(cli(stack, "audit", "events", "--account", account_id, "--json",
                                   token=tokens["read"])))["events"]
    ids = [event["id"] for event in everything]
    assert ids == sorted(ids, reverse=True) and len(ids) >= 4
    assert all(event["accountID"] == account_id for event in everything)

    first = ok(cli(stack, "audit", "events", "--account", account_id, "--limit", "2", "--before", str(ids[0] + 1),
                   token=tokens["read"]))
    lines = first.strip().splitlines()
    assert lines[-1] == f"more: --before {ids[1]}"
    header, rows = table("\n".join(lines[:-1]))
    assert header == ["ID", "OCCURRED", "TYPE", "ACCOUNT ID", "ACTOR", "ACTOR ID", "CLIENT", "DETAIL"]
    assert [int(row[0]) for row in rows] == ids[:2] and {row[3] for row in rows} == {account_id}
    second = json.loads(ok(cli(stack, "audit", "events", "--account", account_id, "--limit", "2", "--before",
                               str(ids[1]), "--json", token=tokens["read"])))
    assert [event["id"] for event in second["events"]] == ids[2:4]

    signins = ok(cli(stack, "audit", "events", "--account", account_id, "--type", "audit.sign_in.succeeded",
                     token=tokens["read"]))
    header, rows = table(signins)
    assert len(rows) == 2 and {row[2] for row in rows} == {"audit.sign_in.succeeded"}
    assert all(row[7].startswith("method=password") for row in rows), rows
    several = json.loads(ok(cli(stack, "audit", "events", "--account", account_id, "--type",
                                "audit.sign_in.succeeded,audit.account.created", "--json", token=tokens["read"])))
    assert {event["type"] for event in several["events"]} == {"audit.sign_in.succeeded", "audit.account.created"}

    assert ok(cli(stack, "audit", "events", "--account", account_id, "--since", "2999-01-01",
                  token=tokens["read"])).strip() == "no audit events"
    assert json.loads(ok(cli(stack, "audit", "events", "--account", account_id, "--until", "2000-01-01T00:00:00Z",
                             "--json", token=tokens["read"]))) == {"events": []}
    recent = json.loads(ok(cli(stack, "audit", "events", "--account", account_id, "--since", "1h",
                               "--until", str(int(time.time() * 1000) + 60_000), "--json", token=tokens["read"])))
    assert {event["id"] for event in recent["events"]} >= set(ids)
    # The reads were audited, as the CLI's token.
    reads = stack.admin.json("GET", f"/admin/v1/audit-events?type=audit.admin.audit_read&limit=500",
                             tokens["read"])["events"]
    assert reads and all(event["actorID"] == tokens["read"].split("_")[1] for event in reads)


def test_tokens_addresses_and_the_apis_refusals(stack, tokens):
    account = str(uuid.uuid4())
    refused(cli(stack, "account", "show", account), 2, "PASSKEY_ADMIN_TOKEN is not set")
    refused(cli(stack, "account", "show", account, token=""), 2, "PASSKEY_ADMIN_TOKEN is not set")
    refused(cli(stack, "account", "show", account, token="not a token\r\nX-Evil: 1"), 2, "is not an admin token")
    unknown = "pkadm_" + "0" * 16 + "_" + "A" * 43
    refused(cli(stack, "account", "show", account, token=unknown), 4, "401 unauthenticated")
    refused(cli(stack, "account", "show", account, token=tokens["write"]), 4, "403 forbidden")
    refused(cli(stack, "sessions", "revoke", account, token=tokens["read"]), 4, "403 forbidden")
    refused(cli(stack, "account", "show", account, token=tokens["read"]), 3, "404 not_found")
    refused(cli(stack, "account", "enable", account, token=tokens["write"]), 3, "404 not_found")
    # A revoked token.
    revoked = make_token(stack, "read")
    SEEN_TOKENS.add(revoked)
    subprocess.run([BIN / "passkey-admin", "token", "revoke", revoked.split("_")[1]],
                   env={**os.environ, "DATABASE_URL": stack.url}, check=True, capture_output=True)
    refused(cli(stack, "account", "show", account, token=revoked), 4, "401")
    # Addresses: nobody listening, https, malformed.
    nobody = f"http://127.0.0.1:{free_port()}"
    message = refused(cli(stack, "account", "show", account, token=tokens["read"], url=nobody), 1, "PASSKEY_ADMIN_URL")
    assert nobody.split("//")[1] in message
    refused(cli(stack, "account", "show", account, token=tokens["read"], url="https://127.0.0.1:8081"), 2,
            "https is not supported")
    for bad in ["ftp://x", "http://user:pw@127.0.0.1:1", "http://127.0.0.1:99999", "http://127.0.0.1:1/admin",
                "http://[::1", "http://a b"]:
        refused(cli(stack, "account", "show", account, token=tokens["read"], url=bad), 2, "PASSKEY_ADMIN_URL")
    # The public listener has no admin routes: a 404 there is "not found", never a success.
    refused(cli(stack, "account", "show", account, token=tokens["read"], url=stack.base_url), 3, "404")


ACCOUNT = "0190c1f2-8e4b-7c3a-9f1e-2b3c4d5e6f70"


@pytest.mark.parametrize("arguments, message", [
    (["accounts"], "usage"),
    (["accounts", "list", "--disabled", "maybe"], "true or false"),
    (["accounts", "remove"], "unknown command"),
    (["account", "delete", ACCOUNT], "unknown command"),
    (["accounts", "find"], "exactly one of"),
    (["accounts", "find", "--email", "a@example.com", "--account-id", ACCOUNT], "exactly one of"),
    (["accounts", "find", "--email", "not-an-address"], "--email"),
    (["accounts", "find", "--email", "a" * 250 + "@example.com"], "--email"),
    (["accounts", "find", "--email", "a\x1b@example.com"], "--email"),
    (["accounts", "find", "--email", "a@example.com", "--email", "b@example.com"], "given twice"),
    (["accounts", "find", "--account-id", "not-a-uuid"], "must be a UUID"),
    (["accounts", "find", "--credential-id", "%%%"], "base64url"),
    (["accounts", "find", "--credential-id", "AAAA="], "base64url"),
    (["accounts", "find", "--credential-id", "A" * 1400], "base64url"),
    (["accounts", "find", "--email"], "needs a value"),
    (["accounts", "find", "--email", "x" * 3000], "longer than"),
    (["account", "show"], "needs one account ID"),
    (["account", "show", ACCOUNT, ACCOUNT], "unexpected argument"),
    (["account", "show", "123"], "must be a UUID"),
    (["account", "show", ACCOUNT, "--verbose"], "unknown option"),
    (["account", "disable", ACCOUNT + "0"], "must be a UUID"),
    (["account", "enable"], "needs one account ID"),
    (["account", "erase", ACCOUNT], "--yes"),
    (["account", "erase", ACCOUNT, "--yes", "--yes"], "given twice"),
    (["sessions", "revoke"], "needs an account ID"),
    (["sessions", "revoke", ACCOUNT, "not-a-session"], "SESSION must be a UUID"),
    (["sessions", "revoke", ACCOUNT, ACCOUNT, ACCOUNT], "unexpected argument"),
    (["passkey", "remove", ACCOUNT], "needs an account ID and a credential ID"),
    (["passkey", "remove", ACCOUNT, "AAAA", "--override"], "unknown option"),
    (["passkey", "remove", ACCOUNT, "A"], "base64url"),
    (["audit", "events", "--limit", "0"], "--limit"),
    (["audit", "events", "--limit", "501"], "--limit"),
    (["audit", "events", "--limit", "-1"], "--limit"),
    (["audit", "events", "--before", "0"], "--before"),
    (["audit", "events", "--before", "abc"], "--before"),
    (["audit", "events", "--before", "99999999999999999999"], "--before"),
    (["audit", "events", "--account", "x"], "must be a UUID"),
    (["audit", "events", "--type", "Audit.Sign_In"], "--type"),
    (["audit", "events", "--type", "t" * 65], "--type"),
    (["audit", "events", *(["--type", "audit.x"] * 33)], "at most 32"),
    (["audit", "events", "--since", "yesterday"], "--since"),
    (["audit", "events", "--since", "2025-02-30"], "--since"),
    (["audit", "events", "--until", "99999999999999999"], "--until"),
    (["audit", "events", "--since", "2025-01-02", "--until", "2025-01-01"], "earlier than --until"),
    (["audit", "events", "extra"], "unexpected argument"),
    (["audit", "list"], "unknown command"),
])
def test_bad_options_exit_2_before_any_request(stack, tokens, arguments, message):
    # An address where nothing listens: were a request made, the status would be 1.
    nobody = f"http://127.0.0.1:{free_port()}"
    result = cli(stack, *arguments, token=tokens["all"], url=nobody)
    refused(result, 2, message)
    assert len(result.stderr) < 4000


def test_help_and_the_usage_text_name_every_command_and_status(stack):
    result = cli(stack, "help")
    assert result.returncode == 0
    for text in ["accounts find", "account show", "account disable", "account enable", "account erase",
                 "sessions revoke", "passkey remove", "audit events", "PASSKEY_ADMIN_URL", "PASSKEY_ADMIN_TOKEN",
                 "4 refused", "5 a rule refused"]:
        assert text in result.stdout, text


def test_accounts_list_pages_with_filters(stack, tokens):
    since = str(int(time.time() * 1000) - 1)
    made = [password_account(stack, passkey=False)[1] for _ in range(3)]
    first = ok(cli(stack, "accounts", "list", "--created-since", since, "--limit", "2", token=tokens["read"]))
    header, rows = table(first.split("\nmore: ")[0])
    assert [row[0] for row in rows] == made[:2]
    cursor = first.strip().splitlines()[-1].removeprefix("more: --after ")
    second = json.loads(ok(cli(stack, "accounts", "list", "--created-since", since, "--after", cursor, "--json",
                               token=tokens["read"])))
    assert [a["accountID"] for a in second["accounts"]] == made[2:] and "nextAfter" not in second
    filtered = json.loads(ok(cli(stack, "accounts", "list", "--created-since", since, "--has-passkey", "true",
                                 "--json", token=tokens["read"])))
    assert filtered == {"accounts": []}
    assert cli(stack, "accounts", "list", "--disabled", "maybe", token=tokens["read"]).returncode == 2
    assert cli(stack, "accounts", "list", "--limit", "201", token=tokens["read"]).returncode == 2
    assert cli(stack, "accounts", "list", "--after", "bogus", token=tokens["read"]).returncode == 2
