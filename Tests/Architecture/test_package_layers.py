"""The package's layers: Package.swift refuses an edge that points up or a module in no layer, the stale edges stay
gone, and every Swift target has MemberImportVisibility on. Evaluates the real manifest (and altered copies of it)
with `swift package dump-package`."""
import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SWIFT = shutil.which("swift") or "/opt/swift/usr/bin/swift"


def dump(manifest_text, tmp_path):
    directory = tmp_path / "package"
    directory.mkdir()
    (directory / "Package.swift").write_text(manifest_text)
    return subprocess.run([SWIFT, "package", "dump-package"], cwd=directory, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def manifest():
    return (ROOT / "Package.swift").read_text()


@pytest.fixture(scope="module")
def package(manifest, tmp_path_factory):
    result = dump(manifest, tmp_path_factory.mktemp("real"))
    assert result.returncode == 0, result.stderr
    return {target["name"]: target for target in json.loads(result.stdout)["targets"]}


def dependencies(target):
    return {entry["byName"][0] for entry in target["dependencies"] if "byName" in entry}


def test_the_stale_and_inverted_edges_are_gone(package):
    assert "GRPC" not in dependencies(package["HTTPServer"]), "HTTPServer needs only TLS, not gRPC"
    assert "Postgres" not in dependencies(package["ServiceRuntime"]), "the runtime reaches the database via storage"
    assert not {"NetworkIO", "Configuration"} & dependencies(package["ServiceContracts"])
    for core in ["ChallengeServiceCore", "VerificationServiceCore", "SessionServiceCore"]:
        assert not {"ServiceRuntime", "PostgresStorage", "Postgres"} & dependencies(package[core]), core


def test_every_swift_target_has_member_import_visibility(package):
    for name, target in package.items():
        if target["type"] == "system":
            continue
        features = [s["kind"].get("enableUpcomingFeature", {}).get("_0") for s in target.get("settings", [])]
        assert "MemberImportVisibility" in features, name


def test_an_edge_that_points_up_does_not_evaluate(manifest, tmp_path):
    line = '    .target(name: "Domain", dependencies: ["Encoding"], path: "Shared/Domain"),'
    assert line in manifest
    result = dump(manifest.replace(line, line.replace('["Encoding"]', '["Encoding", "PostgresStorage"]')), tmp_path)
    assert result.returncode != 0
    assert re.search(r"Domain \(domain and protocol logic.*\) depends on PostgresStorage \(I/O", result.stderr)


def test_a_module_in_no_layer_does_not_evaluate(manifest, tmp_path):
    altered = manifest.replace('"RateLimiting", "WorkerThreads"]', '"WorkerThreads"]', 1)
    assert altered != manifest
    result = dump(altered, tmp_path)
    assert result.returncode != 0
    assert "put RateLimiting in a layer" in result.stderr
