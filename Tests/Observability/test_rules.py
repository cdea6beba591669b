"""The Prometheus alert and recording rules of deploy/observability/rules, checked without a Prometheus server.

promtool (Debian's prometheus package) checks every rule file and runs every unit test file in
deploy/observability/rules/tests; the test files run at once, in processes of their own, since the slow-window
cases take promtool a while. Then the YAML is read to hold the rules to what promtool does not check: every alert
rule has a case where it fires with its labels and every alert a case where it must not; the annotations and the
runbook anchors in docs; the SLO's windows written alike; the PrometheusRule of the production overlay generated
from exactly these files; the names the rules expect (PodDisruptionBudgets, namespace, routes) present in the
manifests and the gateway.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
RULES_DIR = REPO_ROOT / "deploy" / "observability" / "rules"
TESTS_DIR = RULES_DIR / "tests"
RENDER_SCRIPT = REPO_ROOT / "deploy" / "observability" / "render-prometheusrule"
PROMETHEUS_RULE = REPO_ROOT / "deploy" / "kubernetes" / "overlays" / "production" / "prometheusrule.yaml"
KUBERNETES_BASE = REPO_ROOT / "deploy" / "kubernetes" / "base"
PRODUCTION_KUSTOMIZATION = REPO_ROOT / "deploy" / "kubernetes" / "overlays" / "production" / "kustomization.yaml"
GATEWAY_SOURCES = REPO_ROOT / "Services" / "Gateway"
ALERT_DOCS = [REPO_ROOT / "docs" / "observability.md"]

RULE_FILES = sorted(RULES_DIR.glob("*.rules.yaml"))
TEST_FILES = sorted(TESTS_DIR.glob("*.test.yaml"))
SEVERITIES = {"critical", "warning"}
SLO_WINDOWS = ["5m", "30m", "1h", "2h", "6h", "1d", "3d"]
PROMTOOL_TIMEOUT = 1800


def promtool() -> str:
    path = shutil.which("promtool") or ("/usr/bin/promtool" if Path("/usr/bin/promtool").is_file() else None)
    if path is None:
        pytest.fail("promtool is missing: apt-get install prometheus (deploy/local/common.sh's test_apt_packages)")
    return path


def load(path: Path) -> dict:
    with path.open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def groups_of(path: Path) -> list[dict]:
    return load(path)["groups"]


def all_rules() -> list[dict]:
    return [rule for path in RULE_FILES for group in groups_of(path) for rule in group["rules"]]


def alert_rules() -> list[dict]:
    return [rule for rule in all_rules() if "alert" in rule]


def alert_cases() -> list[tuple[Path, str, dict]]:
    """(test file, test name, alert_rule_test entry) for every alert case of every test file."""
    return [(path, test.get("name", "?"), case)
            for path in TEST_FILES
            for test in load(path)["tests"]
            for case in test.get("alert_rule_test") or []]


# ---------------------------------------------------------------------------------------------------------------
# promtool


@pytest.fixture(scope="module")
def promtool_test_runs() -> dict[Path, subprocess.CompletedProcess]:
    """`promtool test rules FILE` for every test file, all started at once."""
    binary = promtool()
    running = {path: subprocess.Popen([binary, "test", "rules", path.name], cwd=TESTS_DIR, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
               for path in TEST_FILES}
    results = {}
    for path, process in running.items():
        try:
            output, _ = process.communicate(timeout=PROMTOOL_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
        results[path] = subprocess.CompletedProcess(process.args, process.returncode, output, "")
    return results


def test_there_are_rule_and_test_files():
    assert RULE_FILES, f"no *.rules.yaml in {RULES_DIR}"
    assert TEST_FILES, f"no *.test.yaml in {TESTS_DIR}"


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda path: path.name)
def test_promtool_check_rules(path: Path):
    result = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.parametrize("path", TEST_FILES, ids=lambda path: path.name)
def test_promtool_test_rules(path: Path, promtool_test_runs):
    result = promtool_test_runs[path]
    assert result.returncode == 0, result.stdout
    assert "SUCCESS" in result.stdout and "FAILED" not in result.stdout, result.stdout


def test_every_rule_file_is_under_test():
    tested = {(TESTS_DIR / name).resolve() for path in TEST_FILES for name in load(path)["rule_files"]}
    assert {path.resolve() for path in RULE_FILES} <= tested


# ---------------------------------------------------------------------------------------------------------------
# What the unit tests cover


def rule_identity(rule: dict) -> str:
    labels = ", ".join(f"{key}={value}" for key, value in sorted((rule.get("labels") or {}).items()))
    return f"{rule['alert']}{{{labels}}}"


def test_every_alert_rule_has_a_case_where_it_fires():
    """Each alert rule (an alert name may have several, told apart by their labels, as the burn-rate windows are)
    is expected to fire, with its labels, in at least one case."""
    expected = [(case["alertname"], alert.get("exp_labels") or {})
                for _, _, case in alert_cases() for alert in case.get("exp_alerts") or []]
    missing = []
    for rule in alert_rules():
        static = {key: str(value) for key, value in (rule.get("labels") or {}).items()}
        if not any(name == rule["alert"] and all(str(labels.get(key)) == value for key, value in static.items())
                   for name, labels in expected):
            missing.append(rule_identity(rule))
    assert missing == [], "alert rules no test expects to fire"


def test_every_alert_has_a_case_where_it_must_not_fire():
    quiet = {case["alertname"] for _, _, case in alert_cases() if not case.get("exp_alerts")}
    missing = sorted({rule["alert"] for rule in alert_rules()} - quiet)
    assert missing == [], "alerts no test expects to stay quiet"


def test_cases_name_alerts_that_exist():
    """A misspelt alertname with `exp_alerts: []` would pass without testing anything."""
    names = {rule["alert"] for rule in alert_rules()}
    unknown = [(path.name, test, case["alertname"]) for path, test, case in alert_cases()
               if case["alertname"] not in names]
    assert unknown == []


def test_expected_alerts_state_their_annotations():
    """A firing case checks the whole alert: exp_annotations with summary, description and runbook_url."""
    incomplete = [(path.name, test, case["alertname"])
                  for path, test, case in alert_cases() for alert in case.get("exp_alerts") or []
                  if set((alert.get("exp_annotations") or {})) != {"summary", "description", "runbook_url"}]
    assert incomplete == []


# ---------------------------------------------------------------------------------------------------------------
# The rules themselves


def alert_doc_headings() -> set[str]:
    """The `### AlertName` headings of the `## Alerts` section, in whichever of the documents has one."""
    headings = set()
    for path in ALERT_DOCS:
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        section = re.search(r"^## Alerts[ \t]*\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
        if section:
            headings |= set(re.findall(r"^### (\S+)[ \t]*$", section.group(1), re.MULTILINE))
    return headings


@pytest.mark.parametrize("rule", alert_rules(), ids=rule_identity)
def test_alert_has_severity_annotations_and_runbook(rule: dict):
    assert (rule.get("labels") or {}).get("severity") in SEVERITIES
    annotations = rule.get("annotations") or {}
    assert annotations.get("summary") and annotations.get("description")
    assert annotations.get("runbook_url") == f"docs/observability.md#{rule['alert'].lower()}"


def test_every_alert_has_a_runbook_section():
    headings = alert_doc_headings()
    assert headings, f"no '### AlertName' headings in {[str(path) for path in ALERT_DOCS]}"
    assert sorted({rule["alert"] for rule in alert_rules()} - headings) == []
    assert sorted(headings - {rule["alert"] for rule in alert_rules()}) == [], "sections of alerts that do not exist"


def test_alert_and_group_names_are_unique_where_they_must_be():
    groups = [group["name"] for path in RULE_FILES for group in groups_of(path)]
    assert len(groups) == len(set(groups)), "the PrometheusRule holds every group: names must not repeat"
    identities = [rule_identity(rule) for rule in alert_rules()]
    assert len(identities) == len(set(identities))


def test_recorded_series_used_by_the_rules_are_recorded():
    recorded = {rule["record"] for rule in all_rules() if "record" in rule}
    used = {name for rule in all_rules() for name in re.findall(r"\b[a-z_]+:[a-z_0-9:]+\b", rule["expr"])}
    assert sorted(used - recorded) == []


@pytest.mark.parametrize("slo", ["signin-availability", "signin-latency"])
def test_slo_windows_are_written_alike(slo: str):
    """The seven error-ratio rules of an SLO differ in their window only (one copied wrong is a silent gap)."""
    rules = {rule["record"]: rule for rule in all_rules()
             if "record" in rule and (rule.get("labels") or {}).get("slo") == slo}
    assert sorted(rules) == sorted(f"slo:sli_error:ratio_rate{window}" for window in SLO_WINDOWS)
    shapes = set()
    for window in SLO_WINDOWS:
        expression = rules[f"slo:sli_error:ratio_rate{window}"]["expr"]
        assert f"[{window}]" in expression
        shapes.add(expression.replace(f"[{window}]", "[WINDOW]"))
    assert len(shapes) == 1, shapes


def test_pdb_alert_names_the_manifests_pdbs_and_namespace():
    (rule,) = [rule for rule in alert_rules() if rule["alert"] == "ReplicasBelowDisruptionBudget"]
    pdbs = {document["metadata"]["name"]
            for path in sorted(KUBERNETES_BASE.glob("*.yaml"))
            for document in yaml.safe_load_all(path.read_text(encoding="utf-8"))
            if document and document.get("kind") == "PodDisruptionBudget"}
    namespace = load(PRODUCTION_KUSTOMIZATION)["namespace"]
    for selector in re.findall(r"\{([^}]*)\}", rule["expr"]):
        assert f'namespace="{namespace}"' in selector
        (names,) = re.findall(r'poddisruptionbudget=~"([^"]+)"', selector)
        assert set(names.split("|")) == pdbs


def test_slo_routes_are_gateway_routes():
    sources = "\n".join(path.read_text(encoding="utf-8") for path in GATEWAY_SOURCES.rglob("*.swift"))
    routes = {f"{method} {pattern}" for method, pattern in re.findall(r'(?:router\.add|Route)\("(\w+)", "([^"]+)"', sources)}
    assert routes, "no route (Route(...) or router.add(...)) found under Services/Gateway"
    expressions = "\n".join(rule["expr"] for rule in all_rules())
    used = {route for values in re.findall(r'route=~?"([^"]+)"', expressions) for route in values.split("|")}
    assert used and sorted(used - routes) == []


# ---------------------------------------------------------------------------------------------------------------
# The production overlay's PrometheusRule


def render_module():
    loader = importlib.machinery.SourceFileLoader("render_prometheusrule", str(RENDER_SCRIPT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_prometheusrule_is_rendered_from_the_rule_files():
    assert PROMETHEUS_RULE.read_text(encoding="utf-8") == render_module().render(), (
        f"{PROMETHEUS_RULE.relative_to(REPO_ROOT)} is stale: run deploy/observability/render-prometheusrule")


def test_prometheusrule_holds_exactly_the_rule_files_groups():
    document = load(PROMETHEUS_RULE)
    assert (document["apiVersion"], document["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert document["spec"]["groups"] == [group for path in RULE_FILES for group in groups_of(path)]


def test_prometheusrule_groups_pass_promtool(tmp_path: Path):
    rules = tmp_path / "prometheusrule.rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": load(PROMETHEUS_RULE)["spec"]["groups"]}), encoding="utf-8")
    result = subprocess.run([promtool(), "check", "rules", str(rules)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_render_check_reports_the_committed_file_current():
    result = subprocess.run([str(RENDER_SCRIPT), "--check"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
