"""schemathesis against the running gateway: every phase (examples, coverage, fuzzing, stateful) and every check,
with the seed and the number of examples of schemathesis.toml, real bearer tokens (hooks.py), and real services and
Postgres behind the gateway. The run must end with no failure and no error, and no response may be a 5xx."""

import collections
import importlib.metadata
import json
import os
import pathlib
import re
import subprocess
import sys

from stack import ROOT

HERE = pathlib.Path(__file__).resolve().parent
ARTIFACTS = ROOT / ".build" / "contract"
OPERATIONS = ("get", "put", "post", "delete", "patch")


def pinned_version():
    for line in (ROOT / "Tests" / "requirements.txt").read_text().splitlines():
        match = re.fullmatch(r"schemathesis==([0-9.]+)", line.strip())
        if match:
            return match.group(1)
    raise AssertionError("Tests/requirements.txt does not pin schemathesis")


def test_schemathesis_finds_no_failure_and_no_server_error(stack, account):
    version = importlib.metadata.version("schemathesis")
    assert version == pinned_version()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    responses_file = ARTIFACTS / "responses.jsonl"
    responses_file.unlink(missing_ok=True)
    env = dict(os.environ)
    env.update({
        "CONTRACT_GATEWAY_URL": stack.base_url,
        "CONTRACT_RESPONSES_FILE": str(responses_file),
        "CONTRACT_ACCOUNT_EMAIL": account["email"],
        "CONTRACT_ACCOUNT_PASSWORD": account["password"],
        # Hypothesis keeps its files here rather than in the work tree.
        "HYPOTHESIS_STORAGE_DIRECTORY": str(ARTIFACTS / "hypothesis"),
    })
    st = pathlib.Path(sys.executable).with_name("st")
    run = subprocess.run(
        [str(st), "--config-file", "schemathesis.toml", "--no-color", "run", f"{stack.base_url}/openapi.json",
         "--url", stack.base_url],
        cwd=HERE, env=env, capture_output=True, text=True, timeout=600)
    output = run.stdout + run.stderr
    (ARTIFACTS / "schemathesis.txt").write_text(output)
    summary = output[output.rfind("SUMMARY"):] if "SUMMARY" in output else output[-3000:]
    assert run.returncode == 0, f"schemathesis failed (full output in {ARTIFACTS / 'schemathesis.txt'}):\n{summary}"
    assert "Errors:" not in summary and "Failures:" not in summary, summary
    generated = re.search(r"(\d+) generated, (\d+) passed", summary)
    assert generated, summary

    recorded = [json.loads(line) for line in responses_file.read_text().splitlines()]
    statuses = collections.Counter(item["status"] for item in recorded)
    server_errors = [item for item in recorded if item["status"] >= 500]
    assert server_errors == [], server_errors[:10]

    document = stack.request("GET", "/openapi.json").json()
    by_operation = collections.defaultdict(collections.Counter)
    for item in recorded:
        by_operation[(item["method"], item["path"])][item["status"]] += 1
    for path, item in document["paths"].items():
        for method, operation in item.items():
            # schemathesis leaves out the document's own route; test_contract.py reads it.
            if method not in OPERATIONS or path == "/openapi.json":
                continue
            seen = by_operation[(method.upper(), path)]
            documented = {int(status) for status in operation["responses"]}
            assert set(seen) & documented, f"{method.upper()} {path} was never answered as documented: {seen}"
            if operation["security"]:
                # The real token reached the route: something other than 401 came back.
                assert set(seen) - {401}, f"{method.upper()} {path} only ever answered 401"

    # The suite's passkeys were listed, and found again through the path parameter to be renamed and removed.
    assert by_operation[("GET", "/v1/passkeys")][200] > 0
    assert by_operation[("PATCH", "/v1/passkeys/{credentialID}")][200] > 0
    assert by_operation[("DELETE", "/v1/passkeys/{credentialID}")][204] > 0
    print(
        f"\nschemathesis {version}: seed 18, {generated.group(1)} cases generated, {generated.group(2)} passed, "
        f"0 failures, {len(recorded)} responses recorded, "
        f"{sum(count for status, count in statuses.items() if status >= 500)} 5xx; "
        f"statuses {dict(sorted(statuses.items()))}")
    assert stack.exited() == {}, f"a process exited: {stack.exited()}\n{stack.log_text()}"
