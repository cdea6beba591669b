"""The Grafana dashboards of deploy/observability/dashboards against a real Prometheus: Debian's server, started here
with deploy/observability/prometheus.yml's jobs pointed at the real stack (Tests/Support/python/passkey_stack.py) and
a 1 s scrape interval, while the stack serves passkey sign-ins from `passkey-signin-load` and, alongside, password
sign-ups and sign-ins (one with a legacy bcrypt hash), an Automatic Passkey Upgrade, failed sign-ins, recovery
starts up to their limit, a refused gRPC call and mail to a real SMTP server (aiosmtpd), so that every series a
panel reads exists.

Then every target's expr of every dashboard, with Grafana's variables substituted as
deploy/observability/render-dashboard-png does, goes through /api/v1/query: each must parse and return at least
one series (one test per dashboard, panel and target, named after them). Every metric name an expr or a variable
reads must be one the scraped processes expose (/api/v1/label/__name__/values). render-dashboard-png then draws the
overview from the same Prometheus.

DASHBOARD_PNG=docs/observability-dashboard.png DASHBOARD_LOAD_SECONDS=80 runs a longer load in steps (rates rising
then falling) and writes the picture docs/observability.md shows."""

import importlib.machinery
import itertools
import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "Support" / "python"))

from passkey_stack import BIN, SERVICES, Stack, free_port, wait_for_port  # noqa: E402
from webauthn_encoding import b64url, cbor  # noqa: E402

OBSERVABILITY = ROOT / "deploy" / "observability"
DASHBOARDS = sorted((OBSERVABILITY / "dashboards").glob("*.json"))
PROMETHEUS_CONFIG = OBSERVABILITY / "prometheus.yml"
RENDER = OBSERVABILITY / "render-dashboard-png"
SCRAPE_INTERVAL = 1.0
PASSWORD = "dashboard suite password"
# Each call's /64 (the gateway counts an IPv6 client by its /64): numbered, so no two calls share one.
_client_networks = itertools.count(1)
PICTURE = os.environ.get("DASHBOARD_PNG")
LOAD_SECONDS = float(os.environ.get("DASHBOARD_LOAD_SECONDS", "80" if PICTURE else "8"))


def _render_module():
    """deploy/observability/render-dashboard-png as a module: the test substitutes variables exactly as it does."""
    loader = importlib.machinery.SourceFileLoader("render_dashboard_png", str(RENDER))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


render = _render_module()


def _queries():
    found = []
    for path in DASHBOARDS:
        dashboard = json.loads(path.read_text())
        for panel, target in render.targets(dashboard):
            found.append(pytest.param(path.stem, panel["title"], target["refId"], target["expr"],
                                      id=f"{path.stem}: {panel['title']} [{target['refId']}]"))
    return found


QUERIES = _queries()

# PromQL words that are not metric names where the tokenizer below meets them.
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset",
            "inf", "nan", "atan2", "start", "end"}


def metric_names(expr):
    """The metric names a PromQL expression selects: identifiers that are not functions, keywords, label names in
    matchers or grouping clauses, or inside strings; plus the plain names of a {__name__=~"a|b"} matcher."""
    names = set()
    for alternation in re.findall(r'__name__\s*=~?\s*"([^"]*)"', expr):
        names.update(name for name in alternation.split("|") if re.fullmatch(r"[A-Za-z_:][A-Za-z0-9_:]*", name))
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)
    text = re.sub(r"\{[^{}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    for match in re.finditer(r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[a-zA-Z]*|[A-Za-z_:][A-Za-z0-9_:]*", text):
        token = match.group(0)
        if token[0].isdigit() or token.lower() in KEYWORDS or text[match.end():].lstrip().startswith("("):
            continue
        names.add(token)
    return names


def variable_selectors(dashboard):
    """The selector of every label_values(selector, label) variable."""
    selectors = []
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable["type"] == "query":
            query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
            match = re.fullmatch(r"label_values\(\s*(.+?)\s*,\s*\w+\s*\)", query.strip())
            if match:
                selectors.append((variable["name"], match.group(1)))
    return selectors


# --- the parts of the run ------------------------------------------------------------------------------------------


class Mailbox:
    """A real SMTP server (aiosmtpd) that accepts and counts every message session-service's outbox sends."""

    def __init__(self):
        self.port = free_port()
        self.received = 0
        self.controller = None

    def start(self):
        from aiosmtpd.controller import Controller

        self.controller = Controller(self, hostname="127.0.0.1", port=self.port)
        self.controller.start()

    def stop(self):
        if self.controller:
            self.controller.stop()
            self.controller = None

    async def handle_DATA(self, server, session, envelope):
        self.received += 1
        return "250 OK: queued"

    def wait_for(self, count, timeout=20):
        deadline = time.monotonic() + timeout
        while self.received < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"only {self.received} of {count} messages arrived")
            time.sleep(0.1)


class TraceCollector:
    """An OTLP/HTTP receiver that takes exports (POST /v1/traces) with 200, as a collector does, so the processes
    count their spans in trace_spans_exported_total, except the first `refuse` exports, answered 503 as by a
    collector that is restarting: the process that sent one counts its spans in
    trace_spans_dropped_total{reason="export_failed"}."""

    def __init__(self):
        import http.server

        collector = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with collector.lock:
                    collector.exports += 1
                    refused = collector.exports <= collector.refuse
                self.send_response(503 if refused else 200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *arguments):
                pass

        self.exports = 0
        self.refuse = 1
        self.lock = threading.Lock()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class Prometheus:
    """Debian's Prometheus server as a process of its own, scraping the stack with the committed scrape config."""

    def __init__(self, directory, ports):
        self.directory = pathlib.Path(directory)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.api = render.Prometheus(self.url)
        config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
        jobs = {job["job_name"] for job in config["scrape_configs"]}
        assert jobs == set(ports), f"prometheus.yml has the jobs {sorted(jobs)}, the stack runs {sorted(ports)}"
        interval = f"{int(SCRAPE_INTERVAL)}s"
        config["global"].update(scrape_interval=interval, scrape_timeout=interval, evaluation_interval=interval)
        for job in config["scrape_configs"]:
            job["static_configs"] = [{"targets": [f"127.0.0.1:{ports[job['job_name']]}"]}]
        self.config = self.directory / "prometheus.yml"
        self.config.write_text(yaml.safe_dump(config, sort_keys=False))
        self.process = None

    def start(self):
        binary = shutil.which("prometheus") or "/usr/bin/prometheus"
        if not os.access(binary, os.X_OK):
            pytest.fail("the Prometheus server is not installed (Debian: apt-get install prometheus)")
        self.log = open(self.directory / "prometheus.log", "wb")
        self.process = subprocess.Popen(
            [binary, f"--config.file={self.config}", f"--storage.tsdb.path={self.directory / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=1d", "--log.level=warn"],
            stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as response:
                    if response.status == 200:
                        return self
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("Prometheus did not start:\n" + (self.directory / "prometheus.log").read_text())
            time.sleep(0.1)

    def wait_for_scrapes(self, after, timeout=20):
        """Until every target has been scraped more than one interval after `after` (so at least twice since)."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.api.get("/api/v1/query", query="min(timestamp(up))")["result"]
            if result and float(result[0]["value"][1]) > after + SCRAPE_INTERVAL:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"the targets were not scraped after {after}: {result}")
            time.sleep(0.2)

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()


P256_GX = bytes.fromhex("6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296")
P256_GY = bytes.fromhex("4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")


def registration(start, origin, user_present):
    """A `none`-attestation registration finish body for a start's options (the P-256 generator as the key: the
    passkey is never used to sign in). Automatic Passkey Upgrade's conditional create has UP = 0."""
    credential_id = os.urandom(16)
    client_data = json.dumps({"type": "webauthn.create", "challenge": start["challenge"], "origin": origin,
                              "crossOrigin": False}, separators=(",", ":")).encode()
    flags = (0x01 if user_present else 0) | 0x04 | 0x40
    auth_data = (bytes.fromhex(_sha256_hex(start["relyingPartyID"])) + bytes([flags]) + bytes(4) + bytes(16)
                 + len(credential_id).to_bytes(2, "big") + credential_id
                 + cbor({1: 2, 3: -7, -1: 1, -2: P256_GX, -3: P256_GY}))
    return {"challengeID": start["challengeID"], "credentialID": b64url(credential_id),
            "clientDataJSON": b64url(client_data),
            "attestationObject": b64url(cbor({"fmt": "none", "attStmt": {}, "authData": auth_data})),
            "transports": ["internal"]}


def _sha256_hex(text):
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


class Traffic:
    """What the load generator does not do: each call from a client address of its own (the gateway trusts
    127.0.0.1 as a proxy), so the per-address limits stay out of the way except where a limit is the point."""

    def __init__(self, stack):
        self.stack = stack

    def call(self, method, path, body=None, token=None, address=None):
        return self.stack.request(method, path, body, token=token,
                                  client_address=address or f"2001:db8:17:{next(_client_networks):x}::1")

    def sql(self, statement):
        self.stack.sql(statement)

    def password_account(self):
        address = f"dash-{uuid.uuid4().hex[:12]}@example.com"
        created = self.call("POST", "/v1/accounts/password", {"email": address, "password": PASSWORD,
                                                              "displayName": "Dash"})
        assert created.status == 201, created.body
        return address, created.json()["accountID"]

    def sign_in(self, address, password=PASSWORD):
        return self.call("POST", "/v1/sessions/password", {"email": address, "password": password})

    def round(self):
        """One of everything: a sign-up and sign-in followed by Automatic Passkey Upgrade, a wrong password, a
        passkey sign-in with an unknown credential, and a recovery start and a finish with a wrong code."""
        address, _ = self.password_account()
        signed_in = self.sign_in(address)
        assert signed_in.status == 200, signed_in.body
        token = signed_in.json()["accessToken"]
        start = self.call("POST", "/v1/passkeys/registrations", {"mode": "conditional"}, token=token)
        assert start.status == 200, start.body
        finish = self.call("POST", "/v1/passkeys/registrations/finish",
                           registration(start.json(), self.stack.origin, user_present=False), token=token)
        assert finish.status == 204, finish.body
        assert self.sign_in(address, "not the password").status == 401
        challenge = self.call("POST", "/v1/passkeys/authentications", {})
        assert challenge.status == 200, challenge.body
        client_data = json.dumps({"type": "webauthn.get", "challenge": challenge.json()["challenge"],
                                  "origin": self.stack.origin, "crossOrigin": False}).encode()
        unknown = self.call("POST", "/v1/passkeys/authentications/finish", {
            "challengeID": challenge.json()["challengeID"], "credentialID": b64url(os.urandom(16)),
            "clientDataJSON": b64url(client_data),
            "authenticatorData": b64url(bytes.fromhex(_sha256_hex("localhost")) + bytes([0x05]) + bytes(4)),
            "signature": b64url(os.urandom(70)), "userHandle": b64url(os.urandom(16))})
        assert unknown.status == 401, unknown.body
        assert self.call("POST", "/v1/recovery", {"email": address}).status == 202
        assert self.call("POST", "/v1/recovery/finish", {"email": address, "code": "00000000"}).status == 400

    def legacy_sign_in(self):
        """A password account whose hash is bcrypt, as an import leaves it: the sign-in replaces it by argon2id."""
        import bcrypt

        address, account_id = self.password_account()
        legacy = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
        self.sql(f"UPDATE password_credentials SET password_hash = '{legacy}' WHERE account_id = '{account_id}'")
        assert self.sign_in(address).status == 200

    def recovery_flood(self):
        """Recovery starts for one email past its limit (20/h, a burst of 10): the gateway answers 429."""
        email = f"flood-{uuid.uuid4().hex[:8]}@example.com"
        statuses = [self.call("POST", "/v1/recovery", {"email": email}).status for _ in range(12)]
        assert 429 in statuses, statuses

    def refused_grpc_call(self):
        """session-service refuses a call from challenge-service's identity (PERMISSION_DENIED), over mutual TLS."""
        import grpc

        certificates = self.stack.certificates
        credentials = grpc.ssl_channel_credentials(
            root_certificates=(certificates / "ca.pem").read_bytes(),
            private_key=(certificates / "challenge-service.key").read_bytes(),
            certificate_chain=(certificates / "challenge-service.pem").read_bytes())
        with grpc.secure_channel(f"127.0.0.1:{self.stack.ports['session-service']}", credentials) as channel:
            call = channel.unary_unary("/passkey.v1.SessionService/ValidateSession")
            with pytest.raises(grpc.RpcError) as refused:
                call(b"", timeout=10)
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED


def load_steps(seconds):
    """(rate, seconds) steps of the passkey sign-in load: one step in the test, rising then falling for the
    picture."""
    if not PICTURE:
        return [(100, seconds)]
    rates = [40, 120, 250, 400, 150]
    return [(rate, seconds / len(rates)) for rate in rates]


class Run:
    """The stack, its Prometheus and what was driven through them: `start`..`end` is the whole run."""

    def __init__(self, stack, prometheus, mailbox, start, end):
        self.stack = stack
        self.prometheus = prometheus
        self.mailbox = mailbox
        self.start = start
        self.end = end
        self.interval = SCRAPE_INTERVAL
        self.rate_interval = render.rate_interval(SCRAPE_INTERVAL, self.interval)
        self.variables = {}

    def substitute(self, expr):
        return render.substitute(expr, self.variables, self.interval, self.rate_interval, self.end - self.start)

    def query(self, expr):
        return self.prometheus.api.get("/api/v1/query", query=expr, time=str(self.end))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    directory = tmp_path_factory.mktemp("dashboards")
    mailbox = Mailbox()
    mailbox.start()
    collector = TraceCollector()
    metrics_ports = {name: free_port() for name in SERVICES}
    stack = Stack("dashboards", environment={
        "PASSKEY_TRUSTED_PROXIES": "127.0.0.1",
        "SMTP_URL": f"smtp://127.0.0.1:{mailbox.port}", "SMTP_STARTTLS": "off", "SMTP_FROM": "no-reply@passkey.test",
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
        # The load generator signs in from one address: the per-address limits of what it calls are off. The
        # recovery limits keep their defaults, which Traffic.recovery_flood meets.
        "PASSKEY_RATE_LIMIT_START_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "0",
        "PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS": "0",
    }, per_process={name: {"METRICS_LISTEN": f"127.0.0.1:{port}"} for name, port in metrics_ports.items()})
    prometheus = None
    try:
        stack.start()
        for port in metrics_ports.values():
            wait_for_port(port)
        prometheus = Prometheus(directory, {**metrics_ports, "gateway": stack.gateway_port}).start()
        started = time.time()
        traffic = Traffic(stack)
        traffic.refused_grpc_call()
        traffic.legacy_sign_in()
        # The Python side runs a round of everything else every few seconds while the load generator runs (not
        # while a service restarts: its calls would fail).
        stop = threading.Event()
        pause = threading.Lock()
        errors = []

        def rounds():
            try:
                traffic.recovery_flood()
                while True:
                    with pause:
                        traffic.round()
                        if PICTURE:
                            traffic.legacy_sign_in()
                            traffic.recovery_flood()
                    if stop.wait(3.0):
                        break
            except BaseException as error:  # noqa: BLE001 - reported by the fixture
                errors.append(error)

        def restart_verification_service():
            """For the picture, a restart under load: the replica drains and stops, is down for a few scrapes and
            comes back; its counters start again from zero."""
            with pause:
                stack.processes["verification-service"].terminate()
                stack.processes["verification-service"].wait(timeout=30)
                time.sleep(3)
                stack.restart("verification-service")
                deadline = time.monotonic() + 30
                while stack.request("GET", "/readyz").status != 200 and time.monotonic() < deadline:
                    time.sleep(0.1)

        def mail_outage():
            """For the picture, the SMTP server away for 20 s: the outbox fills and retries, then drains."""
            mailbox.stop()
            time.sleep(20)
            mailbox.start()

        side = threading.Thread(target=rounds, daemon=True)
        side.start()
        steps = load_steps(LOAD_SECONDS)
        disruptions = []
        if PICTURE:
            # A restart midway through the third step, the mail outage from the start of the fourth.
            disruptions = [
                threading.Timer(sum(seconds for _, seconds in steps[:2]) + steps[2][1] / 2,
                                restart_verification_service),
                threading.Timer(sum(seconds for _, seconds in steps[:3]), mail_outage)]
            for disruption in disruptions:
                disruption.start()
        for rate, seconds in steps:
            load = subprocess.run(
                [str(BIN / "passkey-signin-load"), "--url", stack.base_url, "--origin", stack.origin,
                 "--rp-id", "localhost", "--synced", "--connections", "8", "--rate", str(rate),
                 "--duration", str(seconds)], capture_output=True, text=True, timeout=seconds + 60)
            assert load.returncode == 0, load.stdout + load.stderr
            print(f"\npasskey-signin-load --rate {rate}: {load.stdout.strip()}")
        for disruption in disruptions:
            disruption.join(timeout=60)
        stop.set()
        side.join(timeout=60)
        assert not errors, errors
        mailbox.wait_for(1)
        # The session-service gauges (outbox every 5 s) read what the run left.
        if PICTURE:
            time.sleep(10)
        prometheus.wait_for_scrapes(after=time.time())
        yield Run(stack, prometheus, mailbox, started, time.time())
    finally:
        if prometheus:
            prometheus.stop()
        stack.stop()
        mailbox.stop()
        collector.stop()


# --- the checks ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", DASHBOARDS, ids=[p.stem for p in DASHBOARDS])
def test_the_dashboard_is_grafana_json_on_a_prometheus_data_source(path):
    dashboard = json.loads(path.read_text())
    assert 36 <= dashboard["schemaVersion"] <= 41 and dashboard["uid"] and dashboard["title"]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    known = set(variables) | {"__rate_interval", "__interval", "__interval_ms", "__range", "__range_s", "__range_ms"}
    ids, cells = set(), set()
    everything = [p for p in dashboard["panels"]] + [c for p in dashboard["panels"] for c in p.get("panels", [])]
    for panel in everything:
        assert panel["id"] not in ids, f"panel id {panel['id']} twice"
        ids.add(panel["id"])
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"{panel['title']!r} overlaps another panel"
                cells.add((x, y))
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel.get("description"), f"{panel['title']!r} says nothing about what to look for"
        refs = [target["refId"] for target in panel["targets"]]
        assert len(refs) == len(set(refs)) and refs, panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"] and target["expr"].strip(), panel["title"]
            used = set(re.findall(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)", target["expr"]))
            unknown = {a or b for a, b in used} - known
            assert not unknown, f"{panel['title']!r} uses undefined variables {unknown}"


def test_the_scrape_config_is_valid_and_has_a_job_per_process():
    checked = subprocess.run(["promtool", "check", "config", str(PROMETHEUS_CONFIG)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    assert {job["job_name"] for job in config["scrape_configs"]} == set(SERVICES) | {"gateway"}


def test_every_target_is_scraped_and_up(run):
    result = run.query("up")["result"]
    assert sorted((r["metric"]["job"], r["value"][1]) for r in result) == sorted(
        (job, "1") for job in (*SERVICES, "gateway")), result


@pytest.mark.parametrize("path", DASHBOARDS, ids=[p.stem for p in DASHBOARDS])
def test_every_template_variable_has_values(run, path):
    dashboard = json.loads(path.read_text())
    resolved = render.resolve_variables(run.prometheus.api, dashboard, start=run.start, end=run.end)
    run.variables.update(resolved)
    for variable in dashboard["templating"]["list"]:
        assert resolved[variable["name"]], variable["name"]


@pytest.mark.parametrize("dashboard, panel, ref, expr", QUERIES)
def test_the_panel_query_parses_and_returns_series(run, dashboard, panel, ref, expr):
    if not run.variables:
        for path in DASHBOARDS:
            run.variables.update(render.resolve_variables(run.prometheus.api, json.loads(path.read_text()),
                                                          start=run.start, end=run.end))
    query = run.substitute(expr)
    try:
        result = run.query(query)["result"]
    except render.QueryError as error:
        pytest.fail(f"{dashboard} / {panel} [{ref}] does not parse: {error}\n  {query}")
    assert result, f"{dashboard} / {panel} [{ref}] returns no series:\n  {query}"
    values = sorted(float(r["value"][1]) for r in result)
    print(f"{dashboard} / {panel} [{ref}]: {len(result)} series, {values[0]:.4g} .. {values[-1]:.4g}")


@pytest.mark.parametrize("path", DASHBOARDS, ids=[p.stem for p in DASHBOARDS])
def test_every_metric_the_dashboard_reads_is_exposed(run, path):
    exposed = set(run.prometheus.api.label_values("__name__"))
    dashboard = json.loads(path.read_text())
    missing = {}
    for panel, target in render.targets(dashboard):
        for name in sorted(metric_names(target["expr"]) - exposed):
            missing.setdefault(name, []).append(f"{panel['title']} [{target['refId']}]")
    for variable, selector in variable_selectors(dashboard):
        for name in sorted(metric_names(selector) - exposed):
            missing.setdefault(name, []).append(f"variable ${variable}")
    assert not missing, f"{path.stem} reads metrics no target exposes:\n" + "\n".join(
        f"  {name}: {', '.join(where)}" for name, where in sorted(missing.items()))


def test_the_metric_names_are_read_from_promql():
    assert metric_names('sum by (route, le) (rate(a_bucket{route!~"x|y", le="0.05"}[5m])) / on (route) '
                        'group_left (le) b_total offset 5m or vector(0) > bool 0.5e3') == {"a_bucket", "b_total"}
    assert metric_names('label_replace(up, "a", "b_c", "job", ".*") - time()') == {"up"}
    assert metric_names('{__name__=~"one_total|two_seconds_count"}') == {"one_total", "two_seconds_count"}
    assert metric_names("histogram_quantile(0.99, sum(rate(x_bucket[$__rate_interval])) by (le))") == {"x_bucket"}


def test_render_dashboard_png_draws_the_overview(run):
    output = pathlib.Path(PICTURE) if PICTURE else pathlib.Path(tempfile.mkdtemp()) / "overview.png"
    command = [sys.executable, str(RENDER), "--prometheus", run.prometheus.url, "--start", str(run.start),
               "--end", str(run.end), "--scrape-interval", f"{int(SCRAPE_INTERVAL)}s", "--output", str(output),
               "--title", "Passkey sign-in: overview (deploy/observability/dashboards/passkey-overview.json)\n"
                          "passkey-signin-load at " + ", ".join(f"{r}/s" for r, _ in load_steps(LOAD_SECONDS))
                          + " (debug build, 2 cores), password, recovery and upgrade traffic alongside"
                          + ("; verification-service restarted, then the SMTP server away for 20 s" if PICTURE else "")
                          + "; Prometheus scraping every 1 s"]
    if PICTURE:
        # Rates over 10 s: smoother lines than Grafana's $__rate_interval of 4 s at a 1 s scrape interval.
        command += ["--rate-interval", "10s"]
    drawn = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert drawn.returncode == 0, drawn.stderr
    data = output.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) < 300_000, len(data)
    print(f"\n{output}: {len(data)} bytes{': ' + drawn.stderr.strip() if drawn.stderr.strip() else ''}")
