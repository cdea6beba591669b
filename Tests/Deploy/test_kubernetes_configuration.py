"""The configuration the manifests give the processes: the ConfigMap and its env file, the variable list against
docs/configuration.md, DATABASE_URL's Secret, the Secrets the overlays ship, and the access tokens' key-encryption
key (session-service and verification-service mount the Secret passkey-token-kek whole and read-only at
TOKEN_KEK_MOUNT, where PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE points; no other pod does)."""

from __future__ import annotations

import base64
import re
from urllib.parse import urlsplit

import pytest

from conftest import KUBERNETES_DIR, REPO_ROOT
from kubernetes_checks import *  # noqa: F403
from kubernetes_expectations import *  # noqa: F403


def test_base_ships_no_secret(rendered):
    assert objects_of(rendered["base"], "Secret") == []
    assert objects_of(rendered["production"], "Secret") == []


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_only_session_and_verification_service_mount_the_token_kek(rendered, overlay):
    assert check_token_kek(rendered[overlay]) == []


def test_local_postgres_ships_a_token_kek(rendered):
    assert check_shipped_token_kek(rendered["local-postgres"]) == []
    # Production and ha: the operator makes it; a key in the repository would be anyone's.
    for overlay in ("base", "production", "ha"):
        assert named(rendered[overlay], "Secret", TOKEN_KEK_SECRET) is None, overlay


def test_local_postgres_runs_one_postgres_with_its_own_volume(rendered):
    objects = rendered["local-postgres"]
    statefulset = named(objects, "StatefulSet", "postgres")
    assert statefulset is not None
    assert statefulset["spec"]["replicas"] == 1
    container = containers(statefulset)[0]
    assert container["image"] == "passkey/postgres:latest"
    assert 5432 in {entry["containerPort"] for entry in container["ports"]}
    claims = statefulset["spec"].get("volumeClaimTemplates") or []
    assert claims
    mounts = {mount["name"] for mount in container.get("volumeMounts", [])}
    assert {claim["metadata"]["name"] for claim in claims} <= mounts
    service = named(objects, "Service", "postgres")
    assert service is not None and statefulset["spec"]["serviceName"] == "postgres"
    assert selector_matches(service["spec"]["selector"], pod_labels(statefulset))
    assert any(entry["port"] == 5432 and container_port(container, entry.get("targetPort", 5432)) == 5432
               for entry in service["spec"]["ports"])


def test_local_postgres_secret_points_at_its_postgres(rendered):
    secret = named(rendered["local-postgres"], "Secret", DATABASE_SECRET)
    assert secret is not None
    encoded = (secret.get("data") or {}).get("DATABASE_URL")
    url = base64.b64decode(encoded).decode() if encoded else (secret.get("stringData") or {}).get("DATABASE_URL")
    parts = urlsplit(url)
    assert parts.scheme in ("postgres", "postgresql")
    assert (parts.hostname, parts.port) == ("postgres", 5432)


def test_env_file_is_plain_key_value_lines():
    """podman's --env-file and kustomize's envs both read it: KEY=VALUE lines, # comments, nothing else."""
    text = (KUBERNETES_DIR / "base" / "passkey.env").read_text()
    keys = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Z_][A-Z0-9_]*)=(.*)", line)
        assert match, f"line {number} is not KEY=VALUE: {line!r}"
        value = match.group(2)
        assert value == value.strip(), f"line {number} has whitespace around its value"
        assert not value.startswith(("'", '"')), f"line {number} quotes its value (podman would keep the quotes)"
        assert " #" not in value, f"line {number} has an inline comment (both readers would keep it)"
        keys.append(match.group(1))
    assert len(keys) == len(set(keys)), "a key is set twice"
    assert sorted(keys) == sorted(REQUIRED_VARIABLES)


def test_env_file_is_the_config_map(rendered):
    values = parse_env_file((KUBERNETES_DIR / "base" / "passkey.env").read_text())
    config = config_map_of(rendered["base"], named(rendered["base"], "Deployment", GATEWAY))
    assert config["data"] == values


def test_variable_list_mirrors_the_configuration_doc():
    """Every variable of docs/configuration.md's table of the executables is set by the ConfigMap, comes from the
    Secret (DATABASE_URL), or is left unset on purpose; and nothing else is."""
    text = (REPO_ROOT / "docs" / "configuration.md").read_text()
    section = text.split("## Variables of the executables", 1)[1].split("\n## ", 1)[0]
    names = []
    for line in section.splitlines():
        cells = line.split("|")
        if len(cells) > 2:
            names += re.findall(r"^\s*`([A-Z][A-Z0-9_]+)`\s*$", cells[1])
    assert len(names) > 20
    assert sorted(names) == sorted(REQUIRED_VARIABLES + ["DATABASE_URL"] + UNSET_VARIABLES)
