"""Every overlay rendered and validated against the Kubernetes 1.30 schemas, and the properties its workloads must
have: probes, hardening, resources, Services, autoscaling, disruption budgets, spreading, draining, network
policies, labels, images and replicas."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import VALIDATION_COUNTS
from kubernetes_checks import *  # noqa: F403
from kubernetes_expectations import *  # noqa: F403


def test_kubectl_comes_from_the_wheel(kubectl: Path, kubectl_version: str):
    assert Path(kubectl).resolve().is_relative_to(Path(sys.prefix).resolve()), kubectl
    assert "Client Version" in kubectl_version and "Kustomize Version" in kubectl_version, kubectl_version


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_every_object_validates_against_the_kubernetes_schemas(rendered, overlay):
    objects = rendered[overlay]
    assert objects, f"{overlay} rendered no objects"
    assert check_schemas(objects) == []
    skipped = sum(1 for item in objects if (item.get("apiVersion"), item.get("kind")) in CRD_KINDS)
    VALIDATION_COUNTS[overlay] = (len(objects) - skipped, skipped)


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_the_expected_objects_are_rendered(rendered, overlay):
    objects = rendered[overlay]
    for name in DEPLOYMENTS:
        assert named(objects, "Deployment", name) is not None, name
        assert named(objects, "PodDisruptionBudget", name) is not None, name
        assert named(objects, "Service", name) is not None, name
    assert named(objects, "Job", MIGRATE_JOB) is not None
    assert objects_of(objects, "NetworkPolicy")


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_every_container_has_all_three_probes(rendered, overlay):
    assert check_probes(rendered[overlay]) == []


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_grpc_services_use_grpc_probes_on_their_grpc_port(rendered, overlay):
    assert check_grpc_probes(rendered[overlay]) == []


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_gateway_uses_http_probes_on_healthz_and_readyz(rendered, overlay):
    assert check_gateway_probes(rendered[overlay]) == []


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_nothing_needs_a_shell_in_the_images(rendered, overlay):
    assert check_no_exec(rendered[overlay]) == []


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_every_container_has_requests_and_a_memory_limit(rendered, overlay):
    assert check_resources(rendered[overlay]) == []


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_every_container_is_hardened(rendered, overlay):
    assert check_container_security(rendered[overlay]) == []


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_every_pod_is_hardened(rendered, overlay):
    assert check_pod_security(rendered[overlay]) == []


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_grpc_services_have_headless_services_for_ready_pods(rendered, overlay):
    assert check_headless_services(rendered[overlay]) == []


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_hpa_scales_verification_service_on_cpu(rendered, overlay):
    assert check_hpa(rendered[overlay]) == []


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_every_deployment_has_a_matching_pod_disruption_budget(rendered, overlay):
    assert check_pdbs(rendered[overlay]) == []


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_every_deployment_spreads_over_zones_and_hosts(rendered, overlay):
    assert check_topology_spread(rendered[overlay]) == []


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_pods_leave_the_endpoints_before_they_drain(rendered, overlay):
    assert check_drain(rendered[overlay]) == []


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_config_map_sets_every_variable_but_database_url(rendered, overlay):
    assert check_config(rendered[overlay]) == []


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_database_url_comes_from_the_secret_and_not_to_the_gateway(rendered, overlay):
    source = DATABASE_URL_SOURCE.get(overlay, (DATABASE_SECRET, "DATABASE_URL"))
    assert check_database_url(rendered[overlay], source) == []


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_network_policies_allow_exactly_the_listed_edges(rendered, overlay):
    assert check_network_policies(rendered[overlay], EXPECTED_EDGES_OF.get(overlay, EXPECTED_EDGES)) == []


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_labels_and_selectors(rendered, overlay):
    assert check_labels(rendered[overlay]) == []


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_pod_templates_carry_prometheus_annotations(rendered, overlay):
    assert check_monitoring_annotations(rendered[overlay]) == []


@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_migrate_job_is_a_presync_hook(rendered, overlay):
    assert check_migrate_job(rendered[overlay]) == []


def test_base_images_are_the_plain_latest_images(rendered):
    assert check_images(rendered["base"]) == []
    assert check_images(rendered["local-postgres"]) == []


def test_production_images_come_from_the_registry_with_a_release_tag(rendered):
    assert check_images(rendered["production"], registry=PRODUCTION_REGISTRY, tag=None) == []


def test_base_replicas_and_hpa_bounds(rendered):
    objects = rendered["base"]
    assert check_replicas(objects, {"gateway": 2, "challenge-service": 2, "session-service": 2,
                                    "verification-service": 3}) == []
    hpa = named(objects, "HorizontalPodAutoscaler", "verification-service")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 10)
    assert hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 70


def test_production_runs_more_replicas_than_base(rendered):
    for name in DEPLOYMENTS:
        base = named(rendered["base"], "Deployment", name)["spec"]["replicas"]
        production = named(rendered["production"], "Deployment", name)["spec"]["replicas"]
        assert production > base, name
    base_hpa = named(rendered["base"], "HorizontalPodAutoscaler", "verification-service")["spec"]
    production_hpa = named(rendered["production"], "HorizontalPodAutoscaler", "verification-service")["spec"]
    assert production_hpa["minReplicas"] >= base_hpa["minReplicas"]
    assert production_hpa["maxReplicas"] > base_hpa["maxReplicas"]


def test_base_and_local_postgres_configure_localhost(rendered):
    for overlay in ("base", "local-postgres"):
        data = config_map_of(rendered[overlay], named(rendered[overlay], "Deployment", GATEWAY))["data"]
        assert data["PASSKEY_RP_ID"] == "localhost"
        assert data["PASSKEY_ORIGINS"] == "http://localhost:8080"


def test_production_overrides_the_relying_party(rendered):
    objects = rendered["production"]
    data = config_map_of(objects, named(objects, "Deployment", GATEWAY))["data"]
    assert data["PASSKEY_RP_ID"] == "passkeys.example.com"
    assert data["PASSKEY_ORIGINS"] == "https://passkeys.example.com"
    # A merge keeps the rest of passkey.env.
    base = config_map_of(rendered["base"], named(rendered["base"], "Deployment", GATEWAY))["data"]
    assert set(data) == set(base)
    assert len(objects_of(objects, "ConfigMap")) == 1


def test_production_is_in_namespace_passkeys(rendered):
    objects = rendered["production"]
    namespace = named(objects, "Namespace", "passkeys")
    assert namespace is not None
    for item in objects:
        if item["kind"] != "Namespace":
            assert item["metadata"].get("namespace") == "passkeys", where(item)


def test_production_ingress_terminates_tls_for_the_gateway(rendered):
    objects = rendered["production"]
    ingresses = objects_of(objects, "Ingress")
    assert ingresses
    gateway_service = named(objects, "Service", GATEWAY)
    port_names = {entry.get("name") for entry in gateway_service["spec"]["ports"]}
    port_numbers = {entry.get("port") for entry in gateway_service["spec"]["ports"]}
    for ingress in ingresses:
        tls = ingress["spec"].get("tls") or []
        assert tls and all(entry.get("secretName") for entry in tls)
        tls_hosts = {host for entry in tls for host in entry.get("hosts", [])}
        for rule in ingress["spec"]["rules"]:
            assert rule.get("host") in tls_hosts, rule.get("host")
            for path in rule["http"]["paths"]:
                backend = path["backend"]["service"]
                assert backend["name"] == GATEWAY
                assert backend["port"].get("name") in port_names or backend["port"].get("number") in port_numbers
    assert "passkeys.example.com" in {rule.get("host") for ingress in ingresses for rule in ingress["spec"]["rules"]}


def test_production_service_monitors_name_real_ports(rendered):
    objects = rendered["production"]
    monitors = objects_of(objects, "ServiceMonitor")
    assert monitors, "the production overlay ships ServiceMonitors"
    for monitor in monitors:
        services = [service for service in objects_of(objects, "Service")
                    if selector_matches(monitor["spec"]["selector"], service["metadata"].get("labels") or {})]
        assert services, name_of(monitor)
        for endpoint in monitor["spec"]["endpoints"]:
            for service in services:
                assert endpoint["port"] in {entry.get("name") for entry in service["spec"]["ports"]}, \
                    (name_of(monitor), name_of(service))
