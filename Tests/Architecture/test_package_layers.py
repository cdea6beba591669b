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
    line = '    .target(name: "Domain", dependencies: ["Encoding"], path: "Shared/Domain/Domain"),'
    assert line in manifest
    result = dump(manifest.replace(line, line.replace('["Encoding"]', '["Encoding", "PostgresStorage"]')), tmp_path)
    assert result.returncode != 0
    assert re.search(r"Domain \(domain and protocol logic.*\) depends on PostgresStorage \(I/O", result.stderr)


def test_a_module_outside_the_layer_folders_does_not_evaluate(manifest, tmp_path):
    altered = manifest.replace('path: "Shared/Foundations/RateLimiting"', 'path: "Shared/RateLimiting"', 1)
    assert altered != manifest
    result = dump(altered, tmp_path)
    assert result.returncode != 0
    assert "put RateLimiting in a layer folder" in result.stderr


def test_the_folders_under_shared_are_exactly_the_layers_and_hold_only_modules(package):
    layer_folders = {"System", "Foundations", "Domain", "IO", "Composition"}
    assert {p.name for p in (ROOT / "Shared").iterdir() if p.is_dir()} == layer_folders
    paths = {target["path"] for target in package.values()}
    for layer in layer_folders:
        for folder in (ROOT / "Shared" / layer).iterdir():
            # Every folder of a layer is a module, except the .proto sources the contracts are generated from.
            assert f"Shared/{layer}/{folder.name}" in paths or folder.name == "Protos", folder


IMPORT = re.compile(
    r"^\s*(?:@\w+\s+)*(?:public\s+|internal\s+|package\s+|private\s+|fileprivate\s+)?import\s+"
    r"(?:(?:struct|class|enum|func|protocol|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)", re.M)


def import_mismatches(targets, root):
    """For each Swift target, the package modules its sources import but it does not declare, and those it declares
    but none of its sources imports: {target: (undeclared, unused)} for the targets with either."""
    modules = {name.replace("-", "_"): name for name in targets}
    found = {}
    for name, target in targets.items():
        if target["type"] == "system":
            continue
        imported = set()
        for source in (root / target["path"]).rglob("*.swift"):
            imported |= {modules[m] for m in IMPORT.findall(source.read_text()) if m in modules}
        imported.discard(name)
        declared = dependencies(target) & set(targets)
        if imported - declared or declared - imported:
            found[name] = (sorted(imported - declared), sorted(declared - imported))
    return found


def test_every_target_declares_exactly_the_package_modules_it_imports(package):
    assert import_mismatches(package, ROOT) == {}


def test_the_import_check_finds_both_kinds_of_mismatch(tmp_path):
    (tmp_path / "A").mkdir()
    (tmp_path / "A" / "a.swift").write_text("import Foundation\n@testable import B\npublic import struct C.Thing\n")
    (tmp_path / "tool-x").mkdir()
    (tmp_path / "tool-x" / "main.swift").write_text("import A\n")
    targets = {
        "A": {"type": "regular", "path": "A", "dependencies": [{"byName": ["B", None]}, {"byName": ["D", None]}]},
        "B": {"type": "regular", "path": "B", "dependencies": []},
        "C": {"type": "regular", "path": "C", "dependencies": []},
        "D": {"type": "regular", "path": "D", "dependencies": []},
        "tool-x": {"type": "executable", "path": "tool-x", "dependencies": [{"byName": ["A", None]}]},
        "T": {"type": "test", "path": "T", "dependencies": [{"byName": ["tool-x", None]}]},
    }
    (tmp_path / "T").mkdir()
    (tmp_path / "T" / "t.swift").write_text("@testable import tool_x\n")
    for name in "BCD":
        (tmp_path / name).mkdir()
    assert import_mismatches(targets, tmp_path) == {"A": (["C"], ["D"])}
