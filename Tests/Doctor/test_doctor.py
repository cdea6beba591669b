"""`passkey-admin doctor` over real sockets: each fault a device would trip on, served in turn, refused with its code,
its line and exit status 1; the right deployment passing with status 0; bad input refused with status 2."""

import ssl
import time

import pytest

import passkey_stack
from conftest import APP_ID, RELATED, RP_ID, SIGNING, UPLOAD, doctor, environment_file, right_documents

PORT_WARNING = ("relying-party", "non_standard_port", "warning")
AASA = "/.well-known/apple-app-site-association"
ASSET_LINKS = "/.well-known/assetlinks.json"
WEBAUTHN = "/.well-known/webauthn"
ENDPOINTS = "/.well-known/passkey-endpoints"
JSON_TYPE = {"Content-Type": "application/json"}


def check(server, authority, env_file, *extra):
    return doctor(f"https://{RP_ID}:{server.port}", "--address", "127.0.0.1", "--ca-file", authority.path,
                  "--env-file", env_file, "--json", *extra)


def test_the_right_deployment_passes(serve, authority, tmp_path):
    server = serve()
    run = check(server, authority, environment_file(tmp_path))
    assert run.status == 0, run.stdout + run.stderr
    assert run.problems() == [PORT_WARNING]
    assert run.report["failures"] == 0 and run.report["relyingPartyID"] == RP_ID
    assert [f["check"] for f in run.report["findings"] if f["severity"] == "passed"] == [
        "tls", "apple-app-site-association", "assetlinks.json", "webauthn", "passkey-endpoints"]
    text = doctor(f"https://{RP_ID}:{server.port}", "--address", "127.0.0.1", "--ca-file", authority.path,
                  "--env-file", environment_file(tmp_path))
    assert text.status == 0
    assert f"ok    assetlinks.json: {ASSET_LINKS} grants com.example.app" in text.stdout
    assert text.stdout.endswith("0 failures, 1 warning\n")


def replaced(path, status=200, headers=JSON_TYPE, body=None):
    routes = right_documents()
    routes[path] = (status, headers, body)
    return routes


statement = lambda relation, package="com.example.app", fingerprints=(UPLOAD, SIGNING): {  # noqa: E731
    "relation": [f"delegate_permission/common.{relation}"],
    "target": {"namespace": "android_app", "package_name": package, "sha256_cert_fingerprints": list(fingerprints)}}

FAULTS = {
    "aasa redirected": (
        replaced(AASA, 301, {"Location": "/elsewhere"}, b""), ("apple-app-site-association", "redirected")),
    "aasa as octet-stream": (
        replaced(AASA, headers={"Content-Type": "application/octet-stream"}, body={"webcredentials": {"apps": [APP_ID]}}),
        ("apple-app-site-association", "wrong_content_type")),
    "aasa over 128 KB": (
        replaced(AASA, body={"webcredentials": {"apps": [APP_ID]}, "padding": "x" * 140_000}),
        ("apple-app-site-association", "too_large")),
    "aasa without the app": (
        replaced(AASA, body={"webcredentials": {"apps": ["ZZZZZ99999.com.example.other"]}}),
        ("apple-app-site-association", "app_id_missing"), ("apple-app-site-association", "app_id_not_configured")),
    "aasa not served": (replaced(AASA, 404, {"Content-Type": "text/html"}, b"<h1>no</h1>"),
                        ("apple-app-site-association", "not_found")),
    "aasa a server error": (replaced(AASA, 503, {}, b""), ("apple-app-site-association", "unexpected_status")),
    "assetlinks not json": (replaced(ASSET_LINKS, body=b"<html>"), ("assetlinks.json", "not_json")),
    "assetlinks without the app signing key": (
        replaced(ASSET_LINKS, body=[statement("get_login_creds", fingerprints=[UPLOAD]),
                                    statement("handle_all_urls", fingerprints=[UPLOAD])]),
        ("assetlinks.json", "fingerprint_missing")),
    "assetlinks another package": (
        replaced(ASSET_LINKS, body=[statement("get_login_creds", "com.example.other")]),
        ("assetlinks.json", "package_missing")),
    "assetlinks only app links": (
        replaced(ASSET_LINKS, body=[statement("handle_all_urls")]), ("assetlinks.json", "relation_missing")),
    "assetlinks a sha-1 fingerprint": (
        replaced(ASSET_LINKS, body=[statement("get_login_creds", fingerprints=[UPLOAD, SIGNING, "AB:CD:EF"]),
                                    statement("handle_all_urls")]),
        ("assetlinks.json", "fingerprint_malformed")),
    "webauthn without the related origin": (
        replaced(WEBAUTHN, body={"origins": [f"https://{RP_ID}"]}), ("webauthn", "origin_missing")),
    "webauthn past five labels": (
        replaced(WEBAUTHN, body={"origins": ["https://a.one", "https://b.two", "https://c.three", "https://d.four",
                                             "https://e.five", RELATED, f"https://{RP_ID}"]}),
        ("webauthn", "beyond_label_limit")),
    "webauthn malformed": (replaced(WEBAUTHN, body={"origins": "https://shop.example.net"}), ("webauthn", "malformed")),
    "passkey-endpoints without manage": (
        replaced(ENDPOINTS, body={"enroll": f"https://{RP_ID}/passkeys/enroll"}), ("passkey-endpoints", "malformed")),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_each_fault_is_refused_with_its_fix(serve, authority, tmp_path, fault):
    routes, *expected = FAULTS[fault]
    server = serve(routes)
    run = check(server, authority, environment_file(tmp_path))
    assert run.status == 1, run.stdout + run.stderr
    failures = [(f["check"], f["code"]) for f in run.report["findings"] if f["severity"] == "failure"]
    assert failures == [expected[0]], run.stdout
    problems = {(check_, code) for check_, code, _ in run.problems()}
    assert problems == set(expected) | {PORT_WARNING[:2]}, run.stdout
    assert all(f["fix"] for f in run.report["findings"] if f["severity"] != "passed")


def test_a_redirect_is_reported_and_never_followed(serve, authority, tmp_path):
    server = serve(replaced(AASA, 302, {"Location": "https://www.example.test/elsewhere"}, b""))
    run = check(server, authority, environment_file(tmp_path))
    assert "/elsewhere" not in server.requested and server.requested.count(AASA) == 1
    finding = next(f for f in run.report["findings"] if f["code"] == "redirected")
    assert "302, a redirect to https://www.example.test/elsewhere" in finding["problem"]


def test_a_missing_optional_file_is_a_warning(serve, authority, tmp_path):
    routes = right_documents()
    del routes[ENDPOINTS]
    run = check(serve(routes), authority, environment_file(tmp_path))
    assert run.status == 0
    assert run.problems() == [("passkey-endpoints", "not_found", "warning"), PORT_WARNING]


def test_files_nobody_configured_are_not_required(serve, authority, tmp_path):
    run = check(serve({}), authority, environment_file(
        tmp_path, PASSKEY_APPLE_APP_IDS="", PASSKEY_ANDROID_APPS="", PASSKEY_RELATED_ORIGINS=""))
    assert run.status == 0, run.stdout
    assert run.problems() == [("passkey-endpoints", "not_found", "warning"), PORT_WARNING]


def test_a_slow_server_is_cut_at_the_timeout(serve, authority, tmp_path):
    routes = right_documents()
    routes[WEBAUTHN] = (200, JSON_TYPE, lambda: time.sleep(3) or {"origins": []})
    run = check(serve(routes), authority, environment_file(tmp_path), "--timeout", "1")
    assert run.status == 1
    finding = next(f for f in run.report["findings"] if f["check"] == "webauthn")
    assert finding["code"] == "unreachable" and "timed out" in finding["problem"].lower(), finding
    assert run.seconds < 3


@pytest.mark.parametrize("kind, words", [
    ("expired", "expired"), ("other-name", "other.test"), ("untrusted", "issuer")])
def test_a_certificate_devices_refuse_fails_and_the_files_are_still_checked(
        serve, authority, tmp_path, kind, words):
    if kind == "expired":
        certificate = authority.issue("expired", expired=True)
    elif kind == "other-name":
        certificate = authority.issue("other-name", names=("other.test",))
    else:
        from conftest import CertificateAuthority
        certificate = CertificateAuthority(tmp_path / "other-ca", "another CA").issue("untrusted")
    run = check(serve(certificate=certificate), authority, environment_file(tmp_path))
    assert run.status == 1, run.stdout
    assert run.problems() == [PORT_WARNING, ("tls", "certificate_rejected", "failure")]
    tls = next(f for f in run.report["findings"] if f["check"] == "tls")
    assert words in tls["problem"] or kind == "other-name" and "name" in tls["problem"], tls
    assert all(f["severity"] == "passed" for f in run.report["findings"] if f["check"].startswith(("apple", "asset")))


def test_a_certificate_near_its_end_is_a_warning(serve, authority, tmp_path):
    import datetime
    certificate = authority.issue("soon", valid_for=datetime.timedelta(days=3))
    run = check(serve(certificate=certificate), authority, environment_file(tmp_path))
    assert run.status == 0
    assert run.problems() == [PORT_WARNING, ("tls", "certificate_expires_soon", "warning")]


def test_nothing_listening_is_one_failure_per_file(authority, tmp_path):
    port = passkey_stack.free_port()
    run = doctor(f"https://{RP_ID}:{port}", "--address", "127.0.0.1", "--env-file", environment_file(tmp_path),
                 "--json")
    assert run.status == 1
    assert [f["code"] for f in run.report["findings"] if f["severity"] == "failure"] == ["unreachable"] * 5


@pytest.mark.parametrize("arguments, words", [
    ([], "public URL"),
    (["http://example.test"], "HTTPS only"),
    (["https://example.test/path"], "https://HOST[:PORT]"),
    (["https://example.test:70000"], "port"),
    (["https://example.test", "--address", "example.test"], "--address"),
    (["https://example.test", "--timeout", "0"], "--timeout"),
    (["https://example.test", "--ca-file", "/nonexistent.pem"], "--ca-file"),
    (["https://example.test", "--env-file", "/nonexistent.env"], "cannot be read"),
    (["https://example.test", "--bogus"], "unknown option"),
])
def test_bad_arguments_are_refused_before_any_fetch(arguments, words):
    run = doctor(*arguments)
    assert run.status == 2, run.stdout
    assert words in run.stderr and run.stdout == ""


@pytest.mark.parametrize("overrides, words", [
    ({"PASSKEY_ANDROID_APPS": "com.example.app:AB:CD"}, "PASSKEY_ANDROID_APPS"),
    ({"PASSKEY_ANDROID_APPS": f"example:{UPLOAD}"}, "package name"),
    ({"PASSKEY_APPLE_APP_IDS": "com.example.app"}, "TEAMID.bundle.id"),
    ({"PASSKEY_RELATED_ORIGINS": "shop.example.net"}, "PASSKEY_RELATED_ORIGINS"),
])
def test_a_bad_configuration_file_names_the_variable(tmp_path, overrides, words):
    run = doctor(f"https://{RP_ID}", "--env-file", environment_file(tmp_path, **overrides))
    assert run.status == 2
    assert words in run.stderr


def test_a_configuration_file_that_is_not_key_value_is_refused(tmp_path):
    path = tmp_path / "bad.env"
    path.write_text("PASSKEY_RP_ID=example.test\nexport PASSKEY_ORIGINS\n")
    run = doctor(f"https://{RP_ID}", "--env-file", path)
    assert run.status == 2 and "line 2 is not NAME=VALUE" in run.stderr


@pytest.fixture(scope="module")
def gateway(authority):
    """The real stack, its gateway serving HTTPS with a certificate of the test CA for example.test."""
    certificate, key = authority.issue("gateway")
    port = passkey_stack.free_port()
    configuration = {
        "PASSKEY_RP_ID": RP_ID, "PASSKEY_ORIGINS": f"https://{RP_ID}:{port}", "PASSKEY_RELATED_ORIGINS": RELATED,
        "PASSKEY_APPLE_APP_IDS": APP_ID, "PASSKEY_ANDROID_APPS": f"com.example.app:{UPLOAD}|{SIGNING}",
    }
    context = ssl.create_default_context(cafile=str(authority.path))
    context.check_hostname = False
    stack = passkey_stack.Stack(
        prefix="doctor", ssl_context=context,
        environment=dict(configuration, GATEWAY_TLS_CERTIFICATE=str(certificate), GATEWAY_TLS_KEY=str(key)))
    stack.gateway_port = port
    stack.configuration = configuration
    stack.start()
    yield stack
    stack.stop()


def test_the_gateway_over_https_passes_its_own_configuration(gateway, authority, tmp_path):
    env_file = environment_file(tmp_path, **gateway.configuration)
    run = check(gateway_server(gateway), authority, env_file)
    assert run.status == 0, run.stdout + gateway.log_text()
    assert run.problems() == [PORT_WARNING]


@pytest.mark.parametrize("overrides, expected", [
    ({"PASSKEY_APPLE_APP_IDS": f"{APP_ID},ZZZZZ99999.com.example.other"},
     ("apple-app-site-association", "app_id_missing")),
    ({"PASSKEY_ANDROID_APPS": f"com.example.app:{UPLOAD}|{SIGNING}|{UPLOAD[:-2]}00"},
     ("assetlinks.json", "fingerprint_missing")),
    ({"PASSKEY_ANDROID_APPS": f"com.example.app:{UPLOAD}|{SIGNING},com.example.second:{UPLOAD}"},
     ("assetlinks.json", "package_missing")),
    ({"PASSKEY_RELATED_ORIGINS": f"{RELATED},https://other.example.org"}, ("webauthn", "origin_missing")),
])
def test_the_gateway_configured_otherwise_than_expected_fails(gateway, authority, tmp_path, overrides, expected):
    configuration = dict(gateway.configuration, **overrides)
    run = check(gateway_server(gateway), authority, environment_file(tmp_path, **configuration))
    assert run.status == 1, run.stdout
    assert [(f["check"], f["code"]) for f in run.report["findings"] if f["severity"] == "failure"] == [expected]


class gateway_server:
    """The gateway where `check` takes a server."""

    def __init__(self, stack):
        self.port = stack.gateway_port
