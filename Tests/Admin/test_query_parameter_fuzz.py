"""Every query and path parameter of both listeners, fuzzed against the real processes: for each operation of
openapi.json (the public listener) and openapi-admin.json (the admin listener), each parameter is given values at and
past its type's range (integers at their bounds and one past, 64-bit extremes, times past year 9999, cursors whose
microseconds overflow a database timestamp, strings at and past their length), NULs, control characters, invalid
UTF-8 (lone continuation bytes, overlongs, surrogates, code points past U+10FFFF), malformed percent-encoding, and
repeated or unknown names. The public routes take no query parameters, so each gets every hostile query (which it
must ignore or refuse) and hostile path parameters. No answer may be a 5xx, and every process must still run."""

import http.client
import json
import os
import pathlib
import socket
import subprocess
import sys
import urllib.parse
import uuid

import pytest

TESTS = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "Support" / "python"))

from passkey_stack import BIN, Stack, free_port  # noqa: E402

INT64_MAX = 2**63 - 1
# The last millisecond of year 9999, the admin API's time bound, and the last microsecond.
LAST_MILLISECOND = 253_402_300_799_999
LAST_MICROSECOND = 253_402_300_799_999_999
PASSWORD = "fuzz suite password"


def hostile_values():
    """Values any parameter gets, as raw bytes (percent-encoded when sent)."""
    some_id = str(uuid.uuid4())
    values = [
        b"", b"\x00", b"a\x00", b"\x00a", b"audit.\x00", b"audit.sign_in.failed\x00", b"\x01", b"\x1f", b"\x7f",
        b"\r\n", b"\t", b" ", b"\xff", b"\xfe\xff", b"\x80", b"\xc3\x28", b"\xc0\x80", b"\xe0\x80\xaf",
        b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80", "\u202e".encode(), "\ufeff".encode(),
        "é".encode() * 40, "\U0001F600".encode() * 20, b"'", b'"', b"\\", b"%", b"../..", b"null", b"true",
        b"false", b"TRUE", b"0", b"-0", b"1", b"-1", b"+1", b"01", b"1.5", b"1e3", b"1e400", b"NaN", b"Infinity",
        b"0x10", b" 1", b"1 ", str(INT64_MAX).encode(), str(INT64_MAX - 1).encode(), str(INT64_MAX + 1).encode(),
        str(-(2**63)).encode(), str(-(2**63) - 1).encode(), str(2**64).encode(), b"9" * 40,
        str(LAST_MILLISECOND).encode(), str(LAST_MILLISECOND + 1).encode(), str(LAST_MICROSECOND).encode(),
        str(LAST_MICROSECOND + 1).encode(), some_id.encode(), some_id.upper().encode(), some_id.encode() + b"\x00",
        b"00000000-0000-0000-0000-000000000000", b"ffffffff-ffff-ffff-ffff-ffffffffffff", b"a" * 4096,
    ]
    for micros in [0, 1, LAST_MICROSECOND, LAST_MICROSECOND + 1, INT64_MAX - 1, INT64_MAX, INT64_MAX + 1, 10**19]:
        values.append(f"{micros}_{some_id}".encode())
    values += [f"-1_{some_id}".encode(), f"1_{some_id}\x00".encode(), b"1_\xff" + some_id.encode()[1:]]
    return values


# Percent-encodings that are themselves malformed, sent as they are.
MALFORMED_ENCODINGS = ["%", "%0", "%G0", "%%", "%zz", "a%", "%u0000", "%C3", "%ED%A0", "%00%00", "+%00+"]


def schema_values(schema):
    """Values at and past the bounds a parameter's schema states."""
    schema = schema or {}
    if schema.get("type") == "array":
        return schema_values(schema.get("items"))
    values = []
    if schema.get("type") == "integer":
        low, high = schema.get("minimum"), schema.get("maximum")
        for bound in [low, high]:
            if bound is not None:
                values += [str(bound - 1).encode(), str(bound).encode(), str(bound + 1).encode()]
    for length in [schema.get("minLength"), schema.get("maxLength")]:
        if length is not None:
            for n in {max(0, length - 1), length, length + 1}:
                values += [b"a" * n, "é".encode() * n]
    for value in schema.get("enum", []):
        text = str(value).encode()
        values += [text, text.upper(), text + b"\x00", text + b" "]
    return values


def encode(raw):
    return urllib.parse.quote_from_bytes(raw, safe="")


def resolve(document, parameter):
    if "$ref" in parameter:
        return document["components"]["parameters"][parameter["$ref"].split("/")[-1]]
    return parameter


def operations(document):
    """(method, path template, [parameters]) for every operation of an OpenAPI document."""
    found = []
    for path, item in document["paths"].items():
        shared = [resolve(document, p) for p in item.get("parameters", [])]
        for method, operation in item.items():
            if method == "parameters":
                continue
            own = [resolve(document, p) for p in operation.get("parameters", [])]
            names = {p["name"] for p in own}
            found.append((method.upper(), path, own + [p for p in shared if p["name"] not in names]))
    return found


def fill(path, parameters, replaced=None, value=None):
    """The path with each path parameter a valid-looking value, `replaced` (by name) set to `value` (encoded)."""
    for parameter in parameters:
        if parameter["in"] != "path":
            continue
        name = parameter["name"]
        text = value if name == replaced else plausible_path_value(name)
        path = path.replace("{" + name + "}", text)
    return path


def plausible_path_value(name):
    if name == "credentialID":
        return "AAAAAAAAAAAAAAAAAAAAAA"
    if name == "variant":
        return "light"
    if name == "keyID":
        return "k" + uuid.uuid4().hex[:16]
    return str(uuid.uuid4())


class Listener:
    """Raw HTTP/1.1 calls to one listener: the target is sent exactly as given."""

    def __init__(self, port, token=None):
        self.port = port
        self.token = token

    def status(self, method, target, token=None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
        try:
            connection.putrequest(method, target, skip_accept_encoding=True)
            if token or self.token:
                connection.putheader("Authorization", f"Bearer {token or self.token}")
            if method in ("POST", "PATCH", "PUT"):
                connection.putheader("Content-Type", "application/json")
                connection.putheader("Content-Length", "2")
                connection.endheaders(b"{}")
            else:
                connection.endheaders()
            response = connection.getresponse()
            response.read()
            return response.status
        finally:
            connection.close()

    def raw_status(self, request_line):
        """The status of a request whose first line holds bytes http.client will not send (raw non-ASCII)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=15) as connection:
            auth = f"Authorization: Bearer {self.token}\r\n".encode() if self.token else b""
            connection.sendall(request_line + b"\r\nHost: x\r\n" + auth + b"Connection: close\r\n\r\n")
            answer = b""
            while chunk := connection.recv(65536):
                answer += chunk
        return int(answer.split(b" ", 2)[1])


@pytest.fixture(scope="module")
def stack():
    admin_port = free_port()
    limits_off = {name: "0" for name in [
        "PASSKEY_RATE_LIMIT_ADMIN_PER_ADDRESS", "PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS",
        "PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL", "PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS",
        "PASSKEY_RATE_LIMIT_START_PER_ADDRESS", "PASSKEY_RATE_LIMIT_START_GLOBAL",
        "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS", "PASSKEY_RATE_LIMIT_SIGNUP_GLOBAL",
        "PASSKEY_RATE_LIMIT_RECOVERY_PER_ADDRESS", "PASSKEY_RATE_LIMIT_RECOVERY_PER_EMAIL"]}
    the_stack = Stack("queryfuzz", environment={"ADMIN_LISTEN": f"127.0.0.1:{admin_port}", **limits_off}).start()
    the_stack.admin_port = admin_port
    yield the_stack
    exited = the_stack.exited()
    the_stack.stop()
    assert not exited, the_stack.log_text()


def admin_token(stack):
    result = subprocess.run(
        [BIN / "passkey-admin", "token", "create", "--name", "query fuzz", "--scopes", "read,write,erase"],
        env={**os.environ, "DATABASE_URL": stack.url, "USER": "fuzz-suite"}, capture_output=True, text=True,
        check=True)
    return result.stdout.strip().splitlines()[-1]


def session_token(stack):
    address = f"fuzz-{uuid.uuid4().hex[:12]}@example.com"
    created = stack.request("POST", "/v1/accounts/password",
                            {"email": address, "password": PASSWORD, "displayName": "Fuzz"})
    assert created.status == 201, created.body
    signed_in = stack.request("POST", "/v1/sessions/password", {"email": address, "password": PASSWORD})
    assert signed_in.status == 200, signed_in.body
    return signed_in.json()["accessToken"]


def fuzz(listener, document, check):
    """Calls `check(method, target)` for every hostile query and path value of every operation."""
    values = [encode(v) for v in hostile_values()] + MALFORMED_ENCODINGS
    for method, template, parameters in operations(document):
        queries = [p for p in parameters if p["in"] == "query"]
        # A route without query parameters must ignore or refuse any: it gets the hostile values under an unknown
        # name and a known-looking one.
        names = [p["name"] for p in queries] or ["after", "limit"]
        base = fill(template, parameters)
        for parameter in queries or [{"name": n, "schema": {}} for n in names]:
            name = parameter["name"]
            own = [encode(v) for v in schema_values(parameter.get("schema"))]
            for value in values + own:
                check(method, f"{base}?{name}={value}")
            # Twice, many times, with no value, with no "=", and beside an unknown name.
            check(method, f"{base}?{name}=1&{name}=2")
            check(method, f"{base}?" + "&".join([f"{name}=a"] * 40))
            check(method, f"{base}?{name}=")
            check(method, f"{base}?{name}")
            check(method, f"{base}?{name}=1&%00=1")
        # Every parameter at once, each at an extreme.
        if queries:
            check(method, base + "?" + "&".join(f"{p['name']}={INT64_MAX}" for p in queries))
            check(method, base + "?" + "&".join(f"{p['name']}=%00" for p in queries))
        for parameter in parameters:
            if parameter["in"] != "path":
                continue
            for value in values:
                # An empty segment or "." segments route elsewhere; what matters is that nothing is a 5xx.
                check(method, fill(template, parameters, parameter["name"], value))


def test_no_query_or_path_value_is_a_server_error(stack):
    admin = Listener(stack.admin_port, token=admin_token(stack))
    public = Listener(stack.gateway_port)
    token = session_token(stack)
    server_errors = []
    calls = 0

    def checker(listener, with_token):
        def check(method, target):
            nonlocal calls
            calls += 1
            # Signing out would end the session the other calls use.
            use_token = with_token and not (method == "DELETE" and target.split("?")[0] == "/v1/session")
            status = listener.status(method, target, token=token if use_token else None)
            if status >= 500:
                server_errors.append((status, method, target))
        return check

    admin_document = json.loads(http_get(stack.admin_port, "/admin/v1/openapi.json"))
    public_document = json.loads(http_get(stack.gateway_port, "/openapi.json"))
    fuzz(admin, admin_document, checker(admin, False))
    fuzz(public, public_document, checker(public, False))
    fuzz(public, public_document, checker(public, True))
    # Bytes past ASCII in the request target itself, unencoded.
    for line in [b"GET /admin/v1/audit-events?type=\xff HTTP/1.1", b"GET /admin/v1/accounts?after=\xc3\x28 HTTP/1.1",
                 b"GET /admin/v1/accounts?email=\x00 HTTP/1.1", b"GET /admin/v1/accounts/\xed\xa0\x80 HTTP/1.1"]:
        calls += 1
        status = admin.raw_status(line)
        if status >= 500:
            server_errors.append((status, "raw", line))
    for line in [b"GET /v1/session?\xff HTTP/1.1", b"DELETE /v1/sessions/\xf4\x90\x80\x80 HTTP/1.1",
                 b"GET /v1/passkey-providers/\x00/icons/light HTTP/1.1"]:
        calls += 1
        status = public.raw_status(line)
        if status >= 500:
            server_errors.append((status, "raw", line))
    assert calls > 3000, calls
    assert server_errors == [], f"{len(server_errors)} of {calls} calls answered 5xx, first: {server_errors[:20]}"
    assert stack.exited() == {}, stack.log_text()
    # The session the public calls carried is still live: nothing above signed it out or broke it.
    assert stack.request("GET", "/v1/session", token=token).status == 200


def test_the_two_reported_server_errors_are_refusals(stack):
    """The 2026-12-07 probe's two 500s: a well-formed cursor past a database timestamp, and a NUL in an event
    type."""
    admin = Listener(stack.admin_port, token=admin_token(stack))
    some_id = uuid.uuid4()
    for micros in [INT64_MAX, INT64_MAX - 1, LAST_MICROSECOND + 1]:
        assert admin.status("GET", f"/admin/v1/accounts?after={micros}_{some_id}") == 400, micros
    assert admin.status("GET", f"/admin/v1/accounts?after={LAST_MICROSECOND}_{some_id}") == 200
    assert admin.status("GET", "/admin/v1/audit-events?type=audit.%00") == 400
    assert admin.status("GET", "/admin/v1/audit-events?type=audit.sign_in.failed") == 200


def http_get(port, path):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        assert response.status == 200, (path, response.status)
        return response.read()
    finally:
        connection.close()
