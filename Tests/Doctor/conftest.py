"""passkey-admin doctor against real HTTPS servers: a server serving each wrong document and certificate in turn, and
the gateway itself over HTTPS with a throwaway CA."""

import datetime
import http.server
import ipaddress
import json
import pathlib
import ssl
import subprocess
import sys
import threading
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "Support" / "python"))
import passkey_stack  # noqa: E402

RP_ID = "example.test"
UPLOAD = "14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"
SIGNING = "FA:C6:17:45:DC:09:03:78:6F:B9:ED:E6:2A:96:2B:39:9F:73:48:F0:BB:6F:89:9B:83:32:66:75:91:03:3B:9C"
APP_ID = "ABCDE12345.com.example.app"
RELATED = "https://shop.example.net"


class CertificateAuthority:
    """A throwaway CA and the server certificates the suite needs, as PEM files in `directory`."""

    def __init__(self, directory, name="doctor test CA"):
        self.directory = pathlib.Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self.certificate = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(self.key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .sign(self.key, hashes.SHA256()))
        self.path = self.directory / "ca.pem"
        self.path.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))

    def issue(self, label, names=(RP_ID,), valid_for=datetime.timedelta(days=90), expired=False):
        """(certificate path, key path) of a server certificate for `names` (and 127.0.0.1)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        start, end = (now - datetime.timedelta(days=30), now - datetime.timedelta(days=1)) if expired else (
            now - datetime.timedelta(minutes=5), now + valid_for)
        names = [x509.DNSName(name) for name in names] + [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        certificate = (
            x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, label)]))
            .issuer_name(self.certificate.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256()))
        certificate_path = self.directory / f"{label}.pem"
        key_path = self.directory / f"{label}.key"
        certificate_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        return certificate_path, key_path


@pytest.fixture(scope="session")
def authority(tmp_path_factory):
    return CertificateAuthority(tmp_path_factory.mktemp("doctor-ca"))


def right_documents(origin=f"https://{RP_ID}"):
    """The documents a deployment configured as `environment_file` says serves: path -> (status, headers, body)."""
    json_type = {"Content-Type": "application/json"}
    statement = lambda relation: {  # noqa: E731
        "relation": [f"delegate_permission/common.{relation}"],
        "target": {"namespace": "android_app", "package_name": "com.example.app",
                   "sha256_cert_fingerprints": [UPLOAD, SIGNING]}}
    return {
        "/.well-known/apple-app-site-association": (200, json_type, {"webcredentials": {"apps": [APP_ID]}}),
        "/.well-known/assetlinks.json": (200, json_type, [statement("get_login_creds"), statement("handle_all_urls")]),
        "/.well-known/webauthn": (200, json_type, {"origins": [origin, RELATED]}),
        "/.well-known/passkey-endpoints": (
            200, json_type, {"enroll": f"{origin}/passkeys/enroll", "manage": f"{origin}/passkeys/manage"}),
    }


def environment_file(directory, origins=f"https://{RP_ID}", **overrides):
    """A deployment's KEY=VALUE file; `overrides` replace or add variables."""
    values = {
        "PASSKEY_RP_ID": RP_ID, "PASSKEY_ORIGINS": origins, "PASSKEY_RELATED_ORIGINS": RELATED,
        "PASSKEY_APPLE_APP_IDS": APP_ID, "PASSKEY_ANDROID_APPS": f"com.example.app:{UPLOAD}|{SIGNING}",
    }
    values.update(overrides)
    path = pathlib.Path(directory) / "passkey.env"
    path.write_text("# the deployment's configuration\n\n" + "".join(f"{k}={v}\n" for k, v in values.items()))
    return path


class DocumentServer:
    """An HTTPS server on a real socket answering each path from `routes` (status, headers, body: JSON value, bytes,
    or a callable run before answering), 404 otherwise; `requested` lists the paths asked for."""

    def __init__(self, certificate, key, routes):
        self.routes = routes
        self.requested = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                server.requested.append(self.path)
                status, headers, body = server.routes.get(self.path, (404, {"Content-Type": "text/plain"}, b"no"))
                if callable(body):
                    body = body()
                if not isinstance(body, bytes):
                    body = json.dumps(body).encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass  # the doctor stops reading at its limit

            def log_message(self, *arguments):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate, key)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve(authority):
    """serve(routes=right_documents(), certificate=(pem, key)) -> a running DocumentServer, closed after the test."""
    servers = []

    def start(routes=None, certificate=None):
        pem, key = certificate or authority.issue("right")
        server = DocumentServer(pem, key, right_documents() if routes is None else routes)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


class DoctorRun:
    def __init__(self, completed):
        self.status = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr

    @property
    def report(self):
        return json.loads(self.stdout)

    def problems(self):
        """(check, code, severity) of every finding that did not pass."""
        return sorted((f["check"], f["code"], f["severity"]) for f in self.report["findings"]
                      if f["severity"] != "passed")


def doctor(*arguments, timeout=60):
    started = time.monotonic()
    completed = subprocess.run(
        [str(passkey_stack.BIN / "passkey-admin"), "doctor", *map(str, arguments)], capture_output=True, text=True,
        timeout=timeout)
    run = DoctorRun(completed)
    run.seconds = time.monotonic() - started
    return run
