"""Mutual TLS between the gateway and the services: every Deployment mounts its own Secret passkey-grpc-<name>
(check_grpc_tls), the example cert-manager objects of deploy/kubernetes/cert-manager (no schema here:
check_cert_manager_fields checks their fields) issue exactly those Secrets for the right SPIFFE IDs
(check_certificates), and deploy/kubernetes/grpc-secrets prints them from a CA of its own for clusters without
cert-manager (check_grpc_secret_set, with openssl); each check also rejects the objects with one thing broken."""

from __future__ import annotations

import base64
import copy

import pytest
import yaml

from conftest import CERT_MANAGER_DIR, KUBERNETES_DIR
from kubernetes_checks import *  # noqa: F403
from kubernetes_expectations import *  # noqa: F403


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_every_deployment_mounts_its_own_grpc_identity(rendered, overlay):
    assert check_grpc_tls(rendered[overlay]) == []


def test_cert_manager_objects_are_well_formed(cert_manager_objects):
    assert {(item["apiVersion"], item["kind"]) for item in cert_manager_objects} == CERT_MANAGER_KINDS
    assert check_cert_manager_fields(cert_manager_objects) == []
    assert all(item["metadata"].get("namespace") == NAMESPACE for item in cert_manager_objects)
    assert all(item["metadata"]["labels"].get(PART_OF_LABEL) == "passkey" for item in cert_manager_objects)


@pytest.mark.parametrize("overlay", ["production", "local-postgres"])
def test_cert_manager_issues_every_deployments_identity(cert_manager_objects, rendered, overlay):
    assert check_certificates(cert_manager_objects, rendered[overlay]) == []


def test_cert_manager_objects_stay_out_of_the_overlays(rendered):
    """They need cert-manager's CRDs, which a cluster may not have: the operator applies them apart."""
    for overlay in ALL_OVERLAYS:
        kinds = {(item.get("apiVersion"), item.get("kind")) for item in rendered[overlay]}
        assert not kinds & CERT_MANAGER_KINDS, overlay
    for kustomization in KUBERNETES_DIR.rglob("kustomization.yaml"):
        if kustomization.parent != CERT_MANAGER_DIR:
            assert "cert-manager" not in str(yaml.safe_load(kustomization.read_text()).get("resources")), kustomization


def test_grpc_secrets_prints_the_secret_of_every_deployment(rendered, tmp_path):
    result = run_grpc_secrets(str(tmp_path / "ca"))
    assert result.returncode == 0, result.stderr
    secrets = [item for item in yaml.safe_load_all(result.stdout) if item]
    assert len(secrets) == len(DEPLOYMENTS)
    assert check_schemas(secrets) == []
    for overlay in ALL_OVERLAYS:
        assert check_grpc_secret_set(secrets, rendered[overlay], work=tmp_path) == [], overlay


def test_grpc_secrets_renews_from_the_same_ca(rendered, tmp_path):
    """A second run is a rotation: new certificates and keys, the same CA, so old and new trust each other."""
    first_run = run_grpc_secrets(str(tmp_path / "ca"), TRUST_DOMAIN, "2")
    second_run = run_grpc_secrets(str(tmp_path / "ca"), TRUST_DOMAIN, "2")
    assert first_run.returncode == 0 and second_run.returncode == 0, first_run.stderr + second_run.stderr
    first = {name_of(item): item["data"] for item in yaml.safe_load_all(first_run.stdout) if item}
    second = {name_of(item): item["data"] for item in yaml.safe_load_all(second_run.stdout) if item}
    assert set(first) == set(second) == {grpc_secret(name) for name in DEPLOYMENTS}
    for name in first:
        assert first[name]["ca.crt"] == second[name]["ca.crt"], name
        assert first[name]["tls.crt"] != second[name]["tls.crt"], name
        assert first[name]["tls.key"] != second[name]["tls.key"], name
        # The renewed certificate verifies against the ca.crt pods still hold from the first run.
        (tmp_path / "old-ca.crt").write_bytes(base64.b64decode(first[name]["ca.crt"]))
        (tmp_path / "new.crt").write_bytes(base64.b64decode(second[name]["tls.crt"]))
        verified = openssl("verify", "-CAfile", str(tmp_path / "old-ca.crt"), str(tmp_path / "new.crt"))
        assert verified.returncode == 0, verified.stdout + verified.stderr
    # DAYS is the certificates' life: valid in a day, ended in two days and an hour.
    renewed = base64.b64decode(second[grpc_secret(GATEWAY)]["tls.crt"])
    assert openssl("x509", "-noout", "-checkend", str(86400), data=renewed).returncode == 0
    assert openssl("x509", "-noout", "-checkend", str(2 * 86400 + 3600), data=renewed).returncode == 1


def test_grpc_secrets_other_trust_domain(rendered, tmp_path):
    result = run_grpc_secrets(str(tmp_path / "ca"), "example.org")
    assert result.returncode == 0, result.stderr
    secrets = [item for item in yaml.safe_load_all(result.stdout) if item]
    assert check_grpc_secret_set(secrets, rendered["base"], "example.org", work=tmp_path) == []
    # The manifests' trust domain is passkey.internal: these Secrets are refused by that check.
    assert check_grpc_secret_set(secrets, rendered["base"], work=tmp_path)
    # One directory, one trust domain.
    again = run_grpc_secrets(str(tmp_path / "ca"), TRUST_DOMAIN)
    assert again.returncode != 0 and "trust domain" in again.stderr and again.stdout == ""


@pytest.mark.parametrize("arguments", [[], ["a", "passkey.internal", "0"], ["a", "passkey.internal", "ten"],
                                       ["a", "Passkey.Internal"], ["a", "b", "3", "d"]])
def test_grpc_secrets_rejects_bad_arguments(tmp_path, arguments):
    result = run_grpc_secrets(*[str(tmp_path / value) if index == 0 else value
                                for index, value in enumerate(arguments)])
    assert result.returncode == 2, result
    assert result.stdout == "" and result.stderr
    assert not (tmp_path / "a").exists()


# --- cert-manager's Certificates and grpc-secrets' Secrets, broken -----------------------------------------------


def certificate_of(objects, name):
    return first(objects, "Certificate", grpc_secret(name))["spec"]


def wrong_spiffe_id(objects):
    certificate_of(objects, "session-service")["uris"] = [spiffe_id("gateway")]


def other_trust_domain(objects):
    certificate_of(objects, "challenge-service")["uris"] = ["spiffe://example.org/challenge-service"]


def no_client_auth(objects):
    certificate_of(objects, GATEWAY)["usages"] = ["digital signature", "server auth"]


def key_kept_at_renewal(objects):
    certificate_of(objects, "verification-service")["privateKey"]["rotationPolicy"] = "Never"


def rsa_key(objects):
    certificate_of(objects, "session-service")["privateKey"].update(algorithm="RSA", size=2048)


def a_year_long(objects):
    certificate_of(objects, GATEWAY)["duration"] = "8760h"


def renewed_at_the_last_minute(objects):
    certificate_of(objects, "challenge-service")["renewBefore"] = "1m"


def renew_before_after_duration(objects):
    certificate_of(objects, "challenge-service")["renewBefore"] = "48h"


def secret_name_typo(objects):
    certificate_of(objects, "verification-service")["secretName"] = "passkey-grpc-verification"


def misspelt_field(objects):
    spec = certificate_of(objects, "session-service")
    spec["dnsName"] = spec.pop("dnsNames")


def misspelt_usage(objects):
    certificate_of(objects, GATEWAY)["usages"][1] = "serverauth"


def no_issuer(objects):
    objects.remove(first(objects, "Issuer", "passkey-grpc-ca"))


def ca_key_rotated(objects):
    first(objects, "Certificate", "passkey-grpc-ca")["spec"]["privateKey"]["rotationPolicy"] = "Always"


def missing_certificate(objects):
    objects.remove(first(objects, "Certificate", grpc_secret("challenge-service")))


def no_service_dns_name(objects):
    certificate_of(objects, "session-service")["dnsNames"] = ["session-service.passkey.internal"]


def other_namespace(objects):
    first(objects, "Certificate", grpc_secret(GATEWAY))["metadata"]["namespace"] = "default"


def a_ca_for_a_process(objects):
    certificate_of(objects, "verification-service")["isCA"] = True


CERT_MANAGER_BROKEN = [
    (wrong_spiffe_id, check_certificates),
    (other_trust_domain, check_certificates),
    (no_client_auth, check_certificates),
    (key_kept_at_renewal, check_certificates),
    (rsa_key, check_certificates),
    (a_year_long, check_certificates),
    (renewed_at_the_last_minute, check_certificates),
    (renew_before_after_duration, check_cert_manager_fields),
    (secret_name_typo, check_certificates),
    (misspelt_field, check_cert_manager_fields),
    (misspelt_usage, check_cert_manager_fields),
    (no_issuer, check_cert_manager_fields),
    (no_issuer, check_certificates),
    (ca_key_rotated, check_certificates),
    (missing_certificate, check_certificates),
    (no_service_dns_name, check_certificates),
    (other_namespace, check_certificates),
    (a_ca_for_a_process, check_certificates),
]


@pytest.mark.parametrize("breakage, check", CERT_MANAGER_BROKEN,
                         ids=[f"{b.__name__}-{c.__name__}" for b, c in CERT_MANAGER_BROKEN])
def test_a_broken_certificate_fails_its_check(cert_manager_objects, rendered, breakage, check):
    objects = copy.deepcopy(cert_manager_objects)
    run = (lambda: check(objects)) if check is check_cert_manager_fields else (
        lambda: check(objects, rendered["production"]))
    assert run() == [], "the example objects pass before they are broken"
    breakage(objects)
    assert run(), f"{check.__name__} accepted the cert-manager objects after {breakage.__name__}"


@pytest.fixture(scope="module")
def grpc_secret_sets(tmp_path_factory) -> tuple[list[dict], list[dict]]:
    """Two runs of grpc-secrets with CAs of their own."""
    sets = []
    for label in ("one", "other"):
        result = run_grpc_secrets(str(tmp_path_factory.mktemp(label) / "ca"))
        assert result.returncode == 0, result.stderr
        sets.append([item for item in yaml.safe_load_all(result.stdout) if item])
    return sets[0], sets[1]


def swap_certificates(secrets, other):
    a, b = (first(secrets, "Secret", grpc_secret(name))["data"] for name in ("gateway", "session-service"))
    a["tls.crt"], b["tls.crt"] = b["tls.crt"], a["tls.crt"]


def keys_swapped(secrets, other):
    a, b = (first(secrets, "Secret", grpc_secret(name))["data"] for name in ("challenge-service", "gateway"))
    a["tls.key"], b["tls.key"] = b["tls.key"], a["tls.key"]


def no_ca(secrets, other):
    del first(secrets, "Secret", grpc_secret("verification-service"))["data"]["ca.crt"]


def certificate_of_another_ca(secrets, other):
    first(secrets, "Secret", grpc_secret("session-service"))["data"]["tls.crt"] = first(
        other, "Secret", grpc_secret("session-service"))["data"]["tls.crt"]


def another_ca_bundle(secrets, other):
    first(secrets, "Secret", grpc_secret(GATEWAY))["data"]["ca.crt"] = first(
        other, "Secret", grpc_secret(GATEWAY))["data"]["ca.crt"]


def opaque_type(secrets, other):
    first(secrets, "Secret", grpc_secret("challenge-service"))["type"] = "Opaque"


def one_secret_missing(secrets, other):
    secrets.remove(first(secrets, "Secret", grpc_secret("verification-service")))


SECRETS_BROKEN = [swap_certificates, keys_swapped, no_ca, certificate_of_another_ca, another_ca_bundle, opaque_type,
                  one_secret_missing]


@pytest.mark.parametrize("breakage", SECRETS_BROKEN, ids=[b.__name__ for b in SECRETS_BROKEN])
def test_broken_grpc_secrets_fail_their_check(grpc_secret_sets, rendered, tmp_path, breakage):
    secrets, other = copy.deepcopy(grpc_secret_sets[0]), grpc_secret_sets[1]
    assert check_grpc_secret_set(secrets, rendered["base"], work=tmp_path) == []
    breakage(secrets, other)
    assert check_grpc_secret_set(secrets, rendered["base"], work=tmp_path), breakage.__name__
