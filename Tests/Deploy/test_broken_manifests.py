"""Negative tests: the rendered base with one thing broken, and the same check functions reject it."""

from __future__ import annotations

import pytest

from kubernetes_checks import *  # noqa: F403
from kubernetes_expectations import *  # noqa: F403


def test_schema_rejects_a_deployment_without_selector(base):
    deployment = first(base, "Deployment", GATEWAY)
    assert validate_object(deployment) == []
    del deployment["spec"]["selector"]
    problems = validate_object(deployment)
    assert problems and "selector" in problems[0]


def test_schema_rejects_a_container_without_name(base):
    deployment = first(base, "Deployment", "session-service")
    del deployment["spec"]["template"]["spec"]["containers"][0]["name"]
    problems = validate_object(deployment)
    assert problems and "name" in problems[0]


def test_schema_rejects_an_unknown_field(base):
    deployment = first(base, "Deployment", "verification-service")
    deployment["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {"grpc": {"port": 50052}}
    problems = validate_object(deployment)
    assert problems and "livenesProbe" in problems[0]


def test_schema_rejects_a_wrong_type(base):
    deployment = first(base, "Deployment", "challenge-service")
    deployment["spec"]["replicas"] = "two"
    assert validate_object(deployment)


def test_schema_rejects_a_misspelt_pre_stop_action(base):
    # sleep is the 1.30 action; a misspelt one is an unknown field, not a silently ignored hook.
    deployment = first(base, "Deployment", GATEWAY)
    deployment["spec"]["template"]["spec"]["containers"][0]["lifecycle"]["preStop"] = {"slep": {"seconds": 5}}
    assert validate_object(deployment)


def test_schema_rejects_an_unknown_kind(base):
    item = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "x"}}
    assert validate_object(item)


def test_container_without_image_is_rejected(base):
    # The API allows a container without image (a higher-level controller may set it), so the schema accepts this
    # one; the image check does not.
    deployment = first(base, "Deployment", GATEWAY)
    del deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert check_images(base)


def remove_readiness_probe(objects):
    del first(objects, "Deployment", "session-service")["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]


def tcp_liveness_on_a_service(objects):
    first(objects, "Deployment", "challenge-service")["spec"]["template"]["spec"]["containers"][0][
        "livenessProbe"] = {"tcpSocket": {"port": 50051}}


def grpc_probe_on_the_metrics_port(objects):
    first(objects, "Deployment", "verification-service")["spec"]["template"]["spec"]["containers"][0][
        "readinessProbe"]["grpc"]["port"] = 9090


def liveness_follows_the_database(objects):
    del first(objects, "Deployment", "verification-service")["spec"]["template"]["spec"]["containers"][0][
        "livenessProbe"]["grpc"]["service"]


def gateway_readiness_on_healthz(objects):
    first(objects, "Deployment", GATEWAY)["spec"]["template"]["spec"]["containers"][0][
        "readinessProbe"]["httpGet"]["path"] = "/healthz"


def exec_pre_stop(objects):
    first(objects, "Deployment", GATEWAY)["spec"]["template"]["spec"]["containers"][0]["lifecycle"]["preStop"] = {
        "exec": {"command": ["sleep", "5"]}}


def no_memory_limit(objects):
    del first(objects, "Job", MIGRATE_JOB)["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]


def writable_root(objects):
    first(objects, "Deployment", "session-service")["spec"]["template"]["spec"]["containers"][0][
        "securityContext"]["readOnlyRootFilesystem"] = False


def root_pod(objects):
    first(objects, "Deployment", "challenge-service")["spec"]["template"]["spec"]["securityContext"][
        "runAsUser"] = 0


def service_account_token(objects):
    del first(objects, "Job", MIGRATE_JOB)["spec"]["template"]["spec"]["automountServiceAccountToken"]


def service_with_cluster_ip(objects):
    del first(objects, "Service", "verification-service")["spec"]["clusterIP"]


def service_publishing_unready_pods(objects):
    first(objects, "Service", "session-service")["spec"]["publishNotReadyAddresses"] = True


def service_selecting_other_pods(objects):
    first(objects, "Service", "challenge-service")["spec"]["selector"] = {NAME_LABEL: "gateway"}


def service_on_the_wrong_port(objects):
    first(objects, "Service", "challenge-service")["spec"]["ports"][0]["port"] = 50052


def hpa_on_memory(objects):
    first(objects, "HorizontalPodAutoscaler", "verification-service")["spec"]["metrics"][0]["resource"][
        "name"] = "memory"


def pdb_for_the_wrong_pods(objects):
    first(objects, "PodDisruptionBudget", "gateway")["spec"]["selector"]["matchLabels"] = {NAME_LABEL: "gatway"}


def no_zone_spread(objects):
    spec = first(objects, "Deployment", "session-service")["spec"]["template"]["spec"]
    spec["topologySpreadConstraints"] = spec["topologySpreadConstraints"][1:]


def short_grace_period(objects):
    first(objects, "Deployment", "verification-service")["spec"]["template"]["spec"][
        "terminationGracePeriodSeconds"] = 15


def variable_missing_from_config(objects):
    del objects_of(objects, "ConfigMap")[0]["data"]["PASSKEY_TRUSTED_PROXIES"]


def database_url_in_config(objects):
    objects_of(objects, "ConfigMap")[0]["data"]["DATABASE_URL"] = "postgresql://x@y/z"


def database_url_on_the_gateway(objects):
    first(objects, "Deployment", GATEWAY)["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "DATABASE_URL", "valueFrom": {"secretKeyRef": {"name": DATABASE_SECRET, "key": "DATABASE_URL"}}}]


def database_url_as_a_literal(objects):
    first(objects, "Job", MIGRATE_JOB)["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "DATABASE_URL", "value": "postgresql://passkey:secret@db/passkey"}]


def session_service_open_to_verification(objects):
    first(objects, "NetworkPolicy", "session-service-ingress")["spec"]["ingress"][0]["from"].append(
        {"podSelector": {"matchLabels": {NAME_LABEL: "verification-service"}}})


def challenge_service_open_to_verification(objects):
    first(objects, "NetworkPolicy", "challenge-service-ingress")["spec"]["ingress"][0]["from"].append(
        {"podSelector": {"matchLabels": {NAME_LABEL: "verification-service"}}})


def metrics_open_to_everyone(objects):
    del first(objects, "NetworkPolicy", "verification-service-ingress")["spec"]["ingress"][1]["from"]


def no_default_deny(objects):
    objects.remove(first(objects, "NetworkPolicy", "default-deny-ingress"))


def selector_with_part_of(objects):
    first(objects, "Deployment", GATEWAY)["spec"]["selector"]["matchLabels"][PART_OF_LABEL] = "passkey"


def no_hook_annotation(objects):
    del first(objects, "Job", MIGRATE_JOB)["metadata"]["annotations"]["argocd.argoproj.io/hook"]


def no_scrape_annotation(objects):
    del first(objects, "Deployment", "session-service")["spec"]["template"]["metadata"]["annotations"][
        "prometheus.io/port"]


def grpc_volume_of(objects, name):
    return next(volume for volume in pod_spec(first(objects, "Deployment", name))["volumes"]
                if volume["name"] == "grpc-tls")


def grpc_mount_of(objects, name):
    return next(mount for mount in container_of(objects, name)["volumeMounts"] if mount["name"] == "grpc-tls")


def probe_on_the_tls_port(objects):
    container_of(objects, "verification-service")["readinessProbe"]["grpc"]["port"] = 50052


def health_port_undeclared(objects):
    ports = container_of(objects, "session-service")["ports"]
    ports[:] = [entry for entry in ports if entry["containerPort"] != HEALTH_PORT]


def service_claims_h2c(objects):
    first(objects, "Service", "session-service")["spec"]["ports"][0]["appProtocol"] = "kubernetes.io/h2c"


def service_publishes_the_health_port(objects):
    first(objects, "Service", "challenge-service")["spec"]["ports"].append(
        {"name": "grpc-health", "port": HEALTH_PORT, "targetPort": HEALTH_PORT, "protocol": "TCP"})


def health_port_open_to_every_pod(objects):
    first(objects, "NetworkPolicy", "session-service-ingress")["spec"]["ingress"].append(
        {"from": [{"podSelector": {}}], "ports": [{"port": HEALTH_PORT, "protocol": "TCP"}]})


def health_port_open_to_anyone(objects):
    first(objects, "NetworkPolicy", "verification-service-ingress")["spec"]["ingress"].append(
        {"ports": [{"port": HEALTH_PORT, "protocol": "TCP"}]})


def gateway_mounts_a_service_identity(objects):
    grpc_volume_of(objects, GATEWAY)["secret"]["secretName"] = grpc_secret("session-service")


def no_grpc_volume(objects):
    spec = pod_spec(first(objects, "Deployment", "challenge-service"))
    spec["volumes"] = [volume for volume in spec["volumes"] if volume["name"] != "grpc-tls"]


def grpc_mount_with_sub_path(objects):
    grpc_mount_of(objects, "verification-service").update(
        mountPath=f"{GRPC_TLS_MOUNT}/tls.crt", subPath="tls.crt")


def writable_grpc_mount(objects):
    grpc_mount_of(objects, "session-service")["readOnly"] = False


def grpc_mount_elsewhere(objects):
    grpc_mount_of(objects, GATEWAY)["mountPath"] = "/var/run/grpc"


def world_readable_key(objects):
    grpc_volume_of(objects, "challenge-service")["secret"]["defaultMode"] = 0o444


def optional_grpc_secret(objects):
    grpc_volume_of(objects, "session-service")["secret"]["optional"] = True


def some_items_of_the_secret(objects):
    grpc_volume_of(objects, GATEWAY)["secret"]["items"] = [{"key": "tls.crt", "path": "tls.crt"}]


def plaintext_on_one_service(objects):
    container_of(objects, "verification-service").setdefault("env", []).append(
        {"name": "GRPC_PLAINTEXT", "value": "true"})


def plaintext_in_config(objects):
    objects_of(objects, "ConfigMap")[0]["data"]["GRPC_PLAINTEXT"] = "true"


def key_path_elsewhere(objects):
    objects_of(objects, "ConfigMap")[0]["data"]["GRPC_TLS_KEY"] = "/etc/passkey/grpc/key.pem"


def migrate_with_an_identity(objects):
    spec = pod_spec(first(objects, "Job", MIGRATE_JOB))
    spec.setdefault("volumes", []).append(
        {"name": "grpc-tls", "secret": {"secretName": grpc_secret(GATEWAY), "defaultMode": 0o440}})



def token_kek_volume_of(objects, name):
    return secret_volumes(first(objects, "Deployment", name), TOKEN_KEK_SECRET)[0]


def token_kek_mount_of(objects, name):
    volume = token_kek_volume_of(objects, name)["name"]
    return next(mount for mount in container_of(objects, name)["volumeMounts"] if mount["name"] == volume)


def gateway_mounts_the_token_kek(objects):
    spec = pod_spec(first(objects, "Deployment", GATEWAY))
    spec["volumes"].append({"name": "token-kek", "secret": {"secretName": TOKEN_KEK_SECRET, "defaultMode": 0o440}})
    container_of(objects, GATEWAY)["volumeMounts"].append(
        {"name": "token-kek", "mountPath": TOKEN_KEK_MOUNT, "readOnly": True})


def migrate_mounts_the_token_kek(objects):
    spec = pod_spec(first(objects, "Job", MIGRATE_JOB))
    spec.setdefault("volumes", []).append({"name": "keys", "projected": {"sources": [
        {"secret": {"name": TOKEN_KEK_SECRET}}]}})


def challenge_service_reads_the_token_kek(objects):
    container_of(objects, "challenge-service").setdefault("env", []).append(
        {"name": "KEK", "valueFrom": {"secretKeyRef": {"name": TOKEN_KEK_SECRET, "key": TOKEN_KEK_KEY}}})


def no_token_kek_on_verification(objects):
    spec = pod_spec(first(objects, "Deployment", "verification-service"))
    kept = [volume for volume in spec["volumes"] if (volume.get("secret") or {}).get("secretName") != TOKEN_KEK_SECRET]
    names = {volume["name"] for volume in spec["volumes"]} - {volume["name"] for volume in kept}
    spec["volumes"] = kept
    container = container_of(objects, "verification-service")
    container["volumeMounts"] = [mount for mount in container["volumeMounts"] if mount["name"] not in names]


def writable_token_kek_mount(objects):
    token_kek_mount_of(objects, "session-service")["readOnly"] = False


def token_kek_mount_with_sub_path(objects):
    token_kek_mount_of(objects, "verification-service").update(
        mountPath=f"{TOKEN_KEK_MOUNT}/{TOKEN_KEK_KEY}", subPath=TOKEN_KEK_KEY)


def token_kek_mount_elsewhere(objects):
    token_kek_mount_of(objects, "session-service")["mountPath"] = "/var/run/kek"


def world_readable_token_kek(objects):
    token_kek_volume_of(objects, "verification-service")["secret"]["defaultMode"] = 0o444


def optional_token_kek(objects):
    token_kek_volume_of(objects, "session-service")["secret"]["optional"] = True


def token_kek_renamed_by_items(objects):
    token_kek_volume_of(objects, "session-service")["secret"]["items"] = [{"key": TOKEN_KEK_KEY, "path": "kek.hex"}]


def token_kek_path_elsewhere(objects):
    objects_of(objects, "ConfigMap")[0]["data"][TOKEN_KEK_VARIABLE] = "/etc/passkey/kek"


def token_kek_variable_overridden(objects):
    container_of(objects, "verification-service").setdefault("env", []).append(
        {"name": TOKEN_KEK_VARIABLE, "value": "/tmp/kek"})


def token_kek_variable_missing(objects):
    del objects_of(objects, "ConfigMap")[0]["data"][TOKEN_KEK_VARIABLE]


BROKEN = [
    (remove_readiness_probe, check_probes),
    (tcp_liveness_on_a_service, check_grpc_probes),
    (grpc_probe_on_the_metrics_port, check_grpc_probes),
    (liveness_follows_the_database, check_grpc_probes),
    (gateway_readiness_on_healthz, check_gateway_probes),
    (exec_pre_stop, check_no_exec),
    (exec_pre_stop, check_drain),
    (no_memory_limit, check_resources),
    (writable_root, check_container_security),
    (root_pod, check_pod_security),
    (service_account_token, check_pod_security),
    (service_with_cluster_ip, check_headless_services),
    (service_publishing_unready_pods, check_headless_services),
    (service_selecting_other_pods, check_headless_services),
    (service_on_the_wrong_port, check_headless_services),
    (hpa_on_memory, check_hpa),
    (pdb_for_the_wrong_pods, check_pdbs),
    (no_zone_spread, check_topology_spread),
    (short_grace_period, check_drain),
    (variable_missing_from_config, check_config),
    (database_url_in_config, check_config),
    (database_url_on_the_gateway, check_database_url),
    (database_url_as_a_literal, check_database_url),
    (session_service_open_to_verification, check_network_policies),
    (challenge_service_open_to_verification, check_network_policies),
    (metrics_open_to_everyone, check_network_policies),
    (no_default_deny, check_network_policies),
    (selector_with_part_of, check_labels),
    (no_hook_annotation, check_migrate_job),
    (no_scrape_annotation, check_monitoring_annotations),
    (probe_on_the_tls_port, check_grpc_probes),
    (health_port_undeclared, check_grpc_probes),
    (service_claims_h2c, check_headless_services),
    (service_publishes_the_health_port, check_headless_services),
    (health_port_open_to_every_pod, check_network_policies),
    (health_port_open_to_anyone, check_network_policies),
    (gateway_mounts_a_service_identity, check_grpc_tls),
    (no_grpc_volume, check_grpc_tls),
    (grpc_mount_with_sub_path, check_grpc_tls),
    (writable_grpc_mount, check_grpc_tls),
    (grpc_mount_elsewhere, check_grpc_tls),
    (world_readable_key, check_grpc_tls),
    (optional_grpc_secret, check_grpc_tls),
    (some_items_of_the_secret, check_grpc_tls),
    (plaintext_on_one_service, check_grpc_tls),
    (plaintext_in_config, check_grpc_tls),
    (plaintext_in_config, check_config),
    (key_path_elsewhere, check_grpc_tls),
    (key_path_elsewhere, check_config),
    (migrate_with_an_identity, check_migrate_job),
    (gateway_mounts_the_token_kek, check_token_kek),
    (migrate_mounts_the_token_kek, check_token_kek),
    (challenge_service_reads_the_token_kek, check_token_kek),
    (no_token_kek_on_verification, check_token_kek),
    (writable_token_kek_mount, check_token_kek),
    (token_kek_mount_with_sub_path, check_token_kek),
    (token_kek_mount_elsewhere, check_token_kek),
    (world_readable_token_kek, check_token_kek),
    (optional_token_kek, check_token_kek),
    (token_kek_renamed_by_items, check_token_kek),
    (token_kek_path_elsewhere, check_token_kek),
    (token_kek_path_elsewhere, check_config),
    (token_kek_variable_overridden, check_token_kek),
    (token_kek_variable_missing, check_token_kek),
    (token_kek_variable_missing, check_config),
]


@pytest.mark.parametrize("breakage, check", BROKEN, ids=[f"{b.__name__}-{c.__name__}" for b, c in BROKEN])
def test_a_broken_manifest_fails_its_check(base, breakage, check):
    assert check(base) == [], "the rendered base passes before it is broken"
    breakage(base)
    assert check(base), f"{check.__name__} accepted the base after {breakage.__name__}"
