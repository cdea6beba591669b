"""The Kubernetes manifests in deploy/kubernetes, checked without a cluster.

Each overlay (and the base) is rendered with `kubectl kustomize`, every object is validated against the Kubernetes
1.30 OpenAPI schemas with kubernetes-validate in strict mode (an unknown field is an error), and the properties
the system depends on are checked one test each. Every check is a plain function that returns the problems it
found, so the negative tests at the end run the very same functions on objects with one thing broken.

Mutual TLS between the gateway and the services: every Deployment mounts its own Secret passkey-grpc-<name>
(check_grpc_tls), the services are probed on their plaintext health port, the example cert-manager objects of
deploy/kubernetes/cert-manager (no schema here: check_cert_manager_fields checks their fields) issue exactly those
Secrets for the right SPIFFE IDs (check_certificates), and deploy/kubernetes/grpc-secrets prints them from a CA of
its own for clusters without cert-manager (check_grpc_secret_set, with openssl).

Access tokens: session-service and verification-service seal their signing keys under a key-encryption key, the
Secret passkey-token-kek; those two Deployments, and no other pod, mount it whole and read-only at TOKEN_KEK_MOUNT,
where the ConfigMap's PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE points (check_token_kek). The base and production ship
no such Secret (the operator creates it); local-postgres ships one of 32 bytes in hex.

The ha overlay (deploy/kubernetes/overlays/ha) swaps the database for a CloudNativePG Cluster: its custom
resources have no schema here, so check_cnpg_fields checks their fields against the lists below and check_cnpg_cluster
the properties (three instances, one synchronous standby, WAL archiving and scheduled backups through the Barman
Cloud plugin, the services' DATABASE_URL from the Cluster's own Secret).

The configuration variables are listed here (REQUIRED_VARIABLES) rather than parsed out of docs/configuration.md at
run time, so a variable added to the executables is a deliberate change to the manifests;
test_variable_list_mirrors_the_configuration_doc compares this list with the document's table.
"""

from __future__ import annotations

import base64
import copy
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import yaml

from conftest import CERT_MANAGER_DIR, KUBERNETES_DIR, OVERLAYS, REPO_ROOT, VALIDATION_COUNTS, render

KUBERNETES_VERSION = "1.30.0"

# Custom resources have no schema in kubernetes-validate; they are skipped in schema validation, and only these.
CRD_KINDS = {("monitoring.coreos.com/v1", "ServiceMonitor"), ("monitoring.coreos.com/v1", "PrometheusRule")}
# CloudNativePG's kinds (overlays/ha): no schema either; check_cnpg_fields checks them.
CNPG_KINDS = {("postgresql.cnpg.io/v1", "Cluster"), ("postgresql.cnpg.io/v1", "ScheduledBackup"),
              ("barmancloud.cnpg.io/v1", "ObjectStore")}
CRD_KINDS |= CNPG_KINDS
# cert-manager's kinds (deploy/kubernetes/cert-manager): no schema either; check_cert_manager_fields checks them.
CERT_MANAGER_KINDS = {("cert-manager.io/v1", "Certificate"), ("cert-manager.io/v1", "Issuer")}

GATEWAY = "gateway"
GRPC_PORTS = {"challenge-service": 50051, "verification-service": 50052, "session-service": 50053}
DEPLOYMENTS = [GATEWAY, *GRPC_PORTS]
MIGRATE_JOB = "passkey-migrate"
METRICS_PORT = 9090
GATEWAY_PORT = 8080
PRESTOP_SECONDS = 5
DRAIN_SECONDS = 10
IMAGES = {
    "gateway": "passkey/gateway",
    "challenge-service": "passkey/challenge-service",
    "verification-service": "passkey/verification-service",
    "session-service": "passkey/session-service",
    MIGRATE_JOB: "passkey/migrate",
    "postgres": "passkey/postgres",
}
PRODUCTION_REGISTRY = "registry.example.com/"
DATABASE_SECRET = "passkey-database"
# The key-encryption key of the access-token signing keys: a Secret whose one key is the file
# PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE names, mounted by the processes that issue sessions and by nothing else.
TOKEN_KEK_SECRET = "passkey-token-kek"
TOKEN_KEK_KEY = "key"
TOKEN_KEK_MOUNT = "/etc/passkey/token-kek"
TOKEN_KEK_VARIABLE = "PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE"
TOKEN_KEK_DEPLOYMENTS = ["session-service", "verification-service"]
NAME_LABEL = "app.kubernetes.io/name"
PART_OF_LABEL = "app.kubernetes.io/part-of"

# What every deployment sets (the original API contract's table), one entry per variable.
DEPLOYMENT_VARIABLES = [
    "PASSKEY_RP_ID",
    "PASSKEY_RP_NAME",
    "PASSKEY_ORIGINS",
    "PASSKEY_APPLE_APP_IDS",
    "PASSKEY_ANDROID_APPS",
    "PASSKEY_RELATED_ORIGINS",
    "PASSKEY_ENROLL_PAGE",
    "PASSKEY_MANAGE_PAGE",
    "PASSKEY_CHALLENGE_LIFETIME",
    "PASSKEY_ACCOUNT_REGISTRATION_LIFETIME",
    "PASSKEY_SESSION_LIFETIME",
    "PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL",
    "PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS",
    "PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS",
    "PASSKEY_RATE_LIMIT_START_PER_ADDRESS",
    "PASSKEY_RATE_LIMIT_START_GLOBAL",
    "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS",
    "PASSKEY_RATE_LIMIT_SIGNUP_GLOBAL",
    "PASSKEY_RATE_LIMIT_IPV6_PREFIX",
    "PASSKEY_SWEEP_INTERVAL",
    "PASSKEY_SWEEP_BATCH_SIZE",
    "PASSKEY_SWEEP_BATCH_PAUSE",
    "PASSKEY_CEREMONY_RETENTION",
    "PASSKEY_SESSION_RETENTION",
    "PASSKEY_TRUSTED_PROXIES",
    "DATABASE_URL",
    "GATEWAY_LISTEN",
    "CHALLENGE_SERVICE_LISTEN",
    "VERIFICATION_SERVICE_LISTEN",
    "SESSION_SERVICE_LISTEN",
    "CHALLENGE_SERVICE_ADDRESSES",
    "VERIFICATION_SERVICE_ADDRESSES",
    "SESSION_SERVICE_ADDRESSES",
    # Mutual TLS between the gateway and the services (issue 13).
    "GRPC_TLS_CERTIFICATE",
    "GRPC_TLS_KEY",
    "GRPC_TLS_CA",
    "GRPC_TRUST_DOMAIN",
    "GRPC_TLS_RELOAD_INTERVAL",
    "GRPC_PLAINTEXT",
    "GRPC_HEALTH_LISTEN",
    # Recovery (issue 16).
    "SMTP_URL",
    "SMTP_USERNAME",
    "SMTP_FROM",
    "SMTP_STARTTLS",
    "SMTP_CA_FILE",
    "PASSKEY_RATE_LIMIT_RECOVERY_PER_EMAIL",
    "PASSKEY_RATE_LIMIT_RECOVERY_PER_ADDRESS",
    "PASSKEY_RECOVERY_REVOKES_SESSIONS",
    # WebAuthn policy.
    "PASSKEY_ALGORITHMS",
    "PASSKEY_REGISTRATION_USER_VERIFICATION",
    "PASSKEY_AUTHENTICATION_USER_VERIFICATION",
    "PASSKEY_RESIDENT_KEY",
    "PASSKEY_HINTS",
    "PASSKEY_ATTESTATION",
    "PASSKEY_AAGUID_ALLOW",
    "PASSKEY_AAGUID_DENY",
    "PASSKEY_TOP_ORIGINS",
    "PASSKEY_SIGN_COUNT",
    "PASSKEY_BACKUP_ELIGIBILITY_CHANGE",
    "PASSKEY_MDS_BLOB",
    "PASSKEY_MDS_ROOT",
    "PASSKEY_MDS_RELOAD_INTERVAL",
    # The stored audit trail and the admin API (issue 27).
    "PASSKEY_AUDIT_RETENTION",
    "PASSKEY_RATE_LIMIT_ADMIN_PER_ADDRESS",
    # Webhook deliveries.
    "PASSKEY_WEBHOOK_ALLOW_HTTP",
    "PASSKEY_WEBHOOK_TIMEOUT",
    "PASSKEY_WEBHOOK_MAX_RETRY_DELAY",
    "PASSKEY_WEBHOOK_DISABLE_AFTER",
    "PASSKEY_WEBHOOK_CONCURRENCY",
    "PASSKEY_WEBHOOK_RETENTION",
    # Signed access tokens and refresh tokens (docs/sessions.md); the key-encryption key is a mounted Secret's file.
    "PASSKEY_SESSION_TOKENS",
    "PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE",
    "PASSKEY_TOKEN_ALGORITHM",
    "PASSKEY_ACCESS_TOKEN_LIFETIME",
    "PASSKEY_SESSION_IDLE_TIMEOUT",
    "PASSKEY_REFRESH_REUSE_WINDOW",
    "PASSKEY_SIGNING_KEY_PUBLISH_DELAY",
    "PASSKEY_CORS_ORIGINS",
    "PASSKEY_REFRESH_COOKIE",
    "PASSKEY_REAUTHENTICATION_WINDOW",
]
# The README's further variables that the manifests set.
RUNTIME_VARIABLES = ["METRICS_LISTEN", "EVENT_LOOP_THREADS", "DATABASE_POOL_SIZE", "SERVICE_DISCOVERY_INTERVAL"]
# What the manifests leave unset on purpose: TLS ends at the ingress.
UNSET_VARIABLES = ["GATEWAY_TLS_CERTIFICATE", "GATEWAY_TLS_KEY"]
# A secret, like DATABASE_URL's password: never in the ConfigMap.
UNSET_VARIABLES += ["SMTP_PASSWORD"]
# Read only by passkey-import, an operator's tool run by hand, and only when DATABASE_URL is unset.
UNSET_VARIABLES += ["PASSKEY_DATA_DIR"]
# Unset, a pod waits for its database as long as it takes: readiness holds traffic back, nothing crash-loops.
UNSET_VARIABLES += ["DATABASE_WAIT_TIMEOUT"]
# The admin API is off unless an operator turns it on, on a listener no public Service reaches (docs/admin.md).
UNSET_VARIABLES += ["ADMIN_LISTEN"]
# Webhooks go to public HTTPS receivers checked against the system's CAs; an operator opens internal blocks or names
# another CA file deliberately.
UNSET_VARIABLES += ["PASSKEY_WEBHOOK_ALLOWED_NETWORKS", "PASSKEY_WEBHOOK_CA_FILE"]
# Read only by passkey-admin, an operator's tool run by hand; the token is a secret of the operator's.
UNSET_VARIABLES += ["PASSKEY_ADMIN_URL", "PASSKEY_ADMIN_TOKEN"]
# Trace export names the cluster's collector (docs/observability.md): unset, nothing is exported; the rest default.
UNSET_VARIABLES += [
    "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_SAMPLER_ARG",
    "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT",
    "OTEL_RESOURCE_ATTRIBUTES",
]
# Derived defaults: the issuer is the first web origin of PASSKEY_ORIGINS and the audience the issuer, so an overlay
# (or podman's stack on another port) that changes the origins changes them too; a copy here would go stale.
UNSET_VARIABLES += ["PASSKEY_TOKEN_ISSUER", "PASSKEY_TOKEN_AUDIENCE"]
# DATABASE_URL holds a password: it comes from the Secret, never from the ConfigMap.
REQUIRED_VARIABLES = [name for name in DEPLOYMENT_VARIABLES + RUNTIME_VARIABLES if name != "DATABASE_URL"]
# Values other parts of the system rely on, in every overlay.
FIXED_VALUES = {
    "GATEWAY_LISTEN": "0.0.0.0:8080",
    "CHALLENGE_SERVICE_LISTEN": "0.0.0.0:50051",
    "VERIFICATION_SERVICE_LISTEN": "0.0.0.0:50052",
    "SESSION_SERVICE_LISTEN": "0.0.0.0:50053",
    "CHALLENGE_SERVICE_ADDRESSES": "challenge-service:50051",
    "VERIFICATION_SERVICE_ADDRESSES": "verification-service:50052",
    "SESSION_SERVICE_ADDRESSES": "session-service:50053",
    "METRICS_LISTEN": "0.0.0.0:9090",
    "EVENT_LOOP_THREADS": "2",
    "DATABASE_POOL_SIZE": "8",
    # Each pod's own Secret is mounted at GRPC_TLS_MOUNT; the probes ask the health port; the Certificates name
    # identities in this trust domain.
    "GRPC_TLS_CERTIFICATE": "/etc/passkey/grpc/tls.crt",
    "GRPC_TLS_KEY": "/etc/passkey/grpc/tls.key",
    "GRPC_TLS_CA": "/etc/passkey/grpc/ca.crt",
    "GRPC_TRUST_DOMAIN": "passkey.internal",
    "GRPC_PLAINTEXT": "false",
    "GRPC_HEALTH_LISTEN": "0.0.0.0:50060",
    # The token KEK Secret's file where session-service and verification-service mount it.
    "PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE": f"{TOKEN_KEK_MOUNT}/{TOKEN_KEK_KEY}",
}

# Mutual TLS: where each Deployment mounts its Secret, which files of it the variables name, the plaintext health
# port of the services, and the identities.
GRPC_TLS_MOUNT = "/etc/passkey/grpc"
GRPC_TLS_FILES = {"GRPC_TLS_CERTIFICATE": "tls.crt", "GRPC_TLS_KEY": "tls.key", "GRPC_TLS_CA": "ca.crt"}
GRPC_SECRET_KEYS = {"tls.crt", "tls.key", "ca.crt"}
HEALTH_PORT = 50060
TRUST_DOMAIN = "passkey.internal"
# The Service's appProtocol for the gRPC ports: HTTP/2 inside TLS. kubernetes.io/h2c would tell a mesh or a
# proxy to speak plaintext HTTP/2 to them.
GRPC_APP_PROTOCOL = "https"
GRPC_TLS_SCRIPT = KUBERNETES_DIR / "grpc-secrets"


def grpc_secret(name: str) -> str:
    return f"passkey-grpc-{name}"


def spiffe_id(name: str, trust_domain: str = TRUST_DOMAIN) -> str:
    return f"spiffe://{trust_domain}/{name}"

# Every ingress connection the NetworkPolicies allow: (destination pods, port, source). A source is "anywhere",
# "pod:<name label>" (same namespace) or "namespace:<name>".
EXPECTED_EDGES = {
    ("gateway", 8080, "anywhere"),
    ("challenge-service", 50051, "pod:gateway"),
    ("challenge-service", METRICS_PORT, "namespace:monitoring"),
    ("verification-service", 50052, "pod:gateway"),
    ("verification-service", METRICS_PORT, "namespace:monitoring"),
    ("session-service", 50053, "pod:gateway"),
    ("session-service", METRICS_PORT, "namespace:monitoring"),
    ("postgres", 5432, "pod:challenge-service"),
    ("postgres", 5432, "pod:verification-service"),
    ("postgres", 5432, "pod:session-service"),
    ("postgres", 5432, f"pod:{MIGRATE_JOB}"),
}

# The ha overlay is rendered by this module's own `rendered` fixture (below), on top of conftest's overlays.
HA_OVERLAY_DIR = KUBERNETES_DIR / "overlays" / "ha"
ALL_OVERLAYS = [*OVERLAYS, "ha"]

# overlays/ha: the CloudNativePG Cluster, its Secret and the edges its instances need.
CNPG_CLUSTER = "passkey-db"
CNPG_APP_SECRET = f"{CNPG_CLUSTER}-app"
BARMAN_PLUGIN = "barman-cloud.cloudnative-pg.io"
# Where each overlay's services find DATABASE_URL: (Secret, key).
DATABASE_URL_SOURCE = {"ha": (CNPG_APP_SECRET, "uri")}
CNPG_DESTINATION = f"cnpg:{CNPG_CLUSTER}"
HA_EXPECTED_EDGES = EXPECTED_EDGES | {
    (CNPG_DESTINATION, 5432, "pod:challenge-service"),
    (CNPG_DESTINATION, 5432, "pod:verification-service"),
    (CNPG_DESTINATION, 5432, "pod:session-service"),
    (CNPG_DESTINATION, 5432, f"pod:{MIGRATE_JOB}"),
    (CNPG_DESTINATION, 5432, CNPG_DESTINATION),
    (CNPG_DESTINATION, 8000, CNPG_DESTINATION),
    (CNPG_DESTINATION, 8000, "namespace:cnpg-system/pod:cloudnative-pg"),
    (CNPG_DESTINATION, 5432, "namespace:cnpg-system/pod:cloudnative-pg"),
    (CNPG_DESTINATION, 9187, "namespace:monitoring"),
}
EXPECTED_EDGES_OF = {"ha": HA_EXPECTED_EDGES}


@pytest.fixture(scope="session")
def rendered(rendered, kubectl) -> dict[str, list[dict]]:
    """conftest's overlays plus overlays/ha, each rendered once."""
    return {**rendered, "ha": render(kubectl, HA_OVERLAY_DIR)}


# ---------------------------------------------------------------------------------------------------------------
# Helpers


def objects_of(objects: list[dict], kind: str) -> list[dict]:
    return [item for item in objects if item.get("kind") == kind]


def named(objects: list[dict], kind: str, name: str) -> dict | None:
    return next((item for item in objects_of(objects, kind) if item["metadata"].get("name") == name), None)


def name_of(item: dict) -> str:
    return item["metadata"]["name"]


def pod_spec(workload: dict) -> dict:
    return workload.get("spec", {}).get("template", {}).get("spec", {})


def pod_labels(workload: dict) -> dict:
    return workload.get("spec", {}).get("template", {}).get("metadata", {}).get("labels", {}) or {}


def workloads(objects: list[dict], kinds=("Deployment", "StatefulSet", "Job")) -> list[dict]:
    return [item for item in objects if item.get("kind") in kinds]


def containers(workload: dict) -> list[dict]:
    spec = pod_spec(workload)
    return list(spec.get("initContainers", []) or []) + list(spec.get("containers", []) or [])


def where(workload: dict, container: dict | None = None) -> str:
    text = f"{workload['kind']}/{workload['metadata'].get('name')}"
    return text + (f" container {container.get('name')}" if container is not None else "")


def selector_matches(selector: dict, labels: dict) -> bool:
    """Whether a label selector ({matchLabels, matchExpressions} or a Service's plain map) selects `labels`."""
    if not selector:
        return False
    if "matchLabels" in selector or "matchExpressions" in selector:
        match_labels, expressions = selector.get("matchLabels") or {}, selector.get("matchExpressions") or []
    else:
        match_labels, expressions = selector, []
    if any(labels.get(key) != value for key, value in match_labels.items()):
        return False
    for expression in expressions:
        key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and labels.get(key) in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def container_port(container: dict, port) -> int | None:
    """A probe's or Service's port (number or name) as the container's port number."""
    if isinstance(port, int):
        return port
    for entry in container.get("ports", []) or []:
        if entry.get("name") == port:
            return entry.get("containerPort")
    return None


def config_map_of(objects: list[dict], workload: dict) -> dict | None:
    for container in containers(workload):
        for source in container.get("envFrom", []) or []:
            name = (source.get("configMapRef") or {}).get("name")
            if name:
                return named(objects, "ConfigMap", name)
    return None


def env_entry(container: dict, name: str) -> dict | None:
    return next((entry for entry in container.get("env", []) or [] if entry.get("name") == name), None)


def parse_env_file(text: str) -> dict[str, str]:
    values = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key] = value
    return values


# ---------------------------------------------------------------------------------------------------------------
# The checks. Each returns a list of problems; an empty list means the property holds.


def validate_object(item: dict) -> list[str]:
    """Strict schema validation against Kubernetes 1.30; CRD kinds are skipped (they have no schema here)."""
    kind, api_version = item.get("kind"), item.get("apiVersion")
    if (api_version, kind) in CRD_KINDS:
        return []
    label = f"{kind}/{(item.get('metadata') or {}).get('name')}"
    try:
        kubernetes_validate.validate(item, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as error:
        path = ".".join(str(part) for part in error.path)
        return [f"{label}: {path}: {error.message}"]
    except kubernetes_validate.SchemaNotFoundError as error:
        return [f"{label}: {error.message} (not a known CRD either)"]
    except (KeyError, TypeError) as error:
        return [f"{label}: not a Kubernetes object ({error!r})"]
    return []


def check_schemas(objects: list[dict]) -> list[str]:
    return [problem for item in objects for problem in validate_object(item)]


def check_probes(objects: list[dict]) -> list[str]:
    """Every long-running container (Deployments, StatefulSets) has liveness, readiness and startup probes."""
    problems = []
    for workload in workloads(objects, ("Deployment", "StatefulSet")):
        for container in containers(workload):
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                if not container.get(probe):
                    problems.append(f"{where(workload, container)} has no {probe}")
    return problems


def check_grpc_probes(objects: list[dict]) -> list[str]:
    """The gRPC services are probed with the native gRPC health check on their plaintext health port
    (GRPC_HEALTH_LISTEN; the kubelet's probe cannot speak the gRPC port's mutual TLS), which the container
    declares: readiness asks for the whole server (""), which follows the database and draining; startup and
    liveness ask for "liveness", which stays SERVING while the process answers, so a database outage does not
    restart every replica."""
    problems = []
    for name, port in GRPC_PORTS.items():
        deployment = named(objects, "Deployment", name)
        if deployment is None:
            problems.append(f"no Deployment {name}")
            continue
        for container in containers(deployment):
            declared = {entry.get("containerPort") for entry in container.get("ports", []) or []}
            if HEALTH_PORT not in declared:
                problems.append(f"{where(deployment, container)} does not declare the health port {HEALTH_PORT}")
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                grpc = (container.get(probe) or {}).get("grpc")
                if not grpc:
                    problems.append(f"{where(deployment, container)} {probe} is not a grpc probe")
                elif grpc.get("port") != HEALTH_PORT:
                    problems.append(f"{where(deployment, container)} {probe} probes port {grpc.get('port')}, "
                                    f"not the health port {HEALTH_PORT} (the gRPC port {port} is mutual TLS)")
                elif grpc.get("service", "") != ("" if probe == "readinessProbe" else "liveness"):
                    problems.append(f"{where(deployment, container)} {probe} asks for service {grpc.get('service')!r}")
    return problems


def check_gateway_probes(objects: list[dict]) -> list[str]:
    """The gateway is probed over HTTP: /healthz for liveness and startup, /readyz for readiness, on 8080."""
    deployment = named(objects, "Deployment", GATEWAY)
    if deployment is None:
        return ["no Deployment gateway"]
    problems = []
    expected = {"livenessProbe": "/healthz", "readinessProbe": "/readyz", "startupProbe": "/healthz"}
    for container in containers(deployment):
        for probe, path in expected.items():
            http = (container.get(probe) or {}).get("httpGet")
            if not http:
                problems.append(f"{where(deployment, container)} {probe} is not an httpGet probe")
                continue
            if http.get("path") != path:
                problems.append(f"{where(deployment, container)} {probe} asks {http.get('path')}, not {path}")
            if container_port(container, http.get("port")) != GATEWAY_PORT:
                problems.append(f"{where(deployment, container)} {probe} is not on port {GATEWAY_PORT}")
    return problems


def check_no_exec(objects: list[dict]) -> list[str]:
    """The images have no shell: no exec probe or exec lifecycle hook anywhere."""
    problems = []
    for workload in workloads(objects, ("Deployment", "Job")):
        for container in containers(workload):
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                if "exec" in (container.get(probe) or {}):
                    problems.append(f"{where(workload, container)} {probe} uses exec")
            for hook in ("preStop", "postStart"):
                if "exec" in ((container.get("lifecycle") or {}).get(hook) or {}):
                    problems.append(f"{where(workload, container)} {hook} uses exec")
    return problems


def check_resources(objects: list[dict]) -> list[str]:
    """Every container requests CPU and memory and has a memory limit."""
    problems = []
    for workload in workloads(objects):
        for container in containers(workload):
            resources = container.get("resources") or {}
            requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
            for resource in ("cpu", "memory"):
                if resource not in requests:
                    problems.append(f"{where(workload, container)} requests no {resource}")
            if "memory" not in limits:
                problems.append(f"{where(workload, container)} has no memory limit")
    return problems


CONTAINER_SECURITY = {
    "runAsNonRoot": True,
    "runAsUser": 65532,
    "runAsGroup": 65532,
    "readOnlyRootFilesystem": True,
    "allowPrivilegeEscalation": False,
}


def check_container_security(objects: list[dict]) -> list[str]:
    problems = []
    for workload in workloads(objects):
        for container in containers(workload):
            context = container.get("securityContext") or {}
            for key, value in CONTAINER_SECURITY.items():
                if context.get(key) != value:
                    problems.append(f"{where(workload, container)} securityContext.{key} is {context.get(key)!r}")
            if context.get("privileged"):
                problems.append(f"{where(workload, container)} is privileged")
            if (context.get("capabilities") or {}).get("drop") != ["ALL"]:
                problems.append(f"{where(workload, container)} does not drop ALL capabilities")
            if (context.get("capabilities") or {}).get("add"):
                problems.append(f"{where(workload, container)} adds capabilities")
            if (context.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
                problems.append(f"{where(workload, container)} seccompProfile is not RuntimeDefault")
    return problems


def check_pod_security(objects: list[dict]) -> list[str]:
    problems = []
    for workload in workloads(objects):
        spec = pod_spec(workload)
        context = spec.get("securityContext") or {}
        for key in ("runAsNonRoot", "runAsUser", "runAsGroup"):
            if context.get(key) != CONTAINER_SECURITY[key]:
                problems.append(f"{where(workload)} pod securityContext.{key} is {context.get(key)!r}")
        if (context.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
            problems.append(f"{where(workload)} pod seccompProfile is not RuntimeDefault")
        if spec.get("automountServiceAccountToken") is not False:
            problems.append(f"{where(workload)} mounts a service account token")
        if spec.get("hostNetwork") or spec.get("hostPID") or spec.get("hostIPC"):
            problems.append(f"{where(workload)} shares a host namespace")
    return problems


def check_headless_services(objects: list[dict]) -> list[str]:
    """Each gRPC service has a headless Service of its own name that selects its pods and publishes ready ones
    only, on the gRPC port."""
    problems = []
    for name, port in GRPC_PORTS.items():
        service, deployment = named(objects, "Service", name), named(objects, "Deployment", name)
        if service is None or deployment is None:
            problems.append(f"{name}: Service or Deployment missing")
            continue
        spec = service.get("spec", {})
        if spec.get("clusterIP") != "None":
            problems.append(f"Service {name} is not headless (clusterIP {spec.get('clusterIP')!r})")
        if spec.get("publishNotReadyAddresses"):
            problems.append(f"Service {name} publishes pods that are not ready")
        if spec.get("type", "ClusterIP") != "ClusterIP":
            problems.append(f"Service {name} has type {spec.get('type')}")
        if not selector_matches(spec.get("selector") or {}, pod_labels(deployment)):
            problems.append(f"Service {name} selector {spec.get('selector')} does not select its Deployment's pods")
        others = [item for item in workloads(objects) if item is not deployment
                  and selector_matches(spec.get("selector") or {}, pod_labels(item))]
        if others:
            problems.append(f"Service {name} also selects {', '.join(where(item) for item in others)}")
        container = containers(deployment)[0] if containers(deployment) else {}
        grpc_ports = [entry for entry in spec.get("ports", []) or [] if entry.get("port") == port]
        if not grpc_ports:
            problems.append(f"Service {name} has no port {port}")
        for entry in grpc_ports:
            target = entry.get("targetPort", entry.get("port"))
            if container_port(container, target) != port:
                problems.append(f"Service {name} port {port} targets {target!r}, not the container's {port}")
            if entry.get("appProtocol") != GRPC_APP_PROTOCOL:
                problems.append(f"Service {name} port {port} claims appProtocol {entry.get('appProtocol')!r}, not "
                                f"{GRPC_APP_PROTOCOL!r} (the port speaks mutual TLS)")
        if any(entry.get("port") == HEALTH_PORT or entry.get("targetPort") == HEALTH_PORT
               for entry in spec.get("ports", []) or []):
            problems.append(f"Service {name} publishes the plaintext health port {HEALTH_PORT}")
    return problems


def check_hpa(objects: list[dict]) -> list[str]:
    """An autoscaling/v2 HPA scales the verification-service Deployment on CPU utilization."""
    hpas = [item for item in objects_of(objects, "HorizontalPodAutoscaler")
            if item.get("apiVersion") == "autoscaling/v2"
            and item["spec"].get("scaleTargetRef", {}).get("name") == "verification-service"]
    if not hpas:
        return ["no autoscaling/v2 HorizontalPodAutoscaler targets verification-service"]
    problems = []
    for hpa in hpas:
        target = hpa["spec"]["scaleTargetRef"]
        if target.get("kind") != "Deployment" or target.get("apiVersion") != "apps/v1":
            problems.append(f"HPA {name_of(hpa)} targets {target.get('apiVersion')} {target.get('kind')}")
        if named(objects, "Deployment", target.get("name")) is None:
            problems.append(f"HPA {name_of(hpa)} targets a Deployment that is not rendered")
        cpu = [metric for metric in hpa["spec"].get("metrics", []) or []
               if metric.get("type") == "Resource" and metric.get("resource", {}).get("name") == "cpu"]
        if not cpu or cpu[0]["resource"].get("target", {}).get("type") != "Utilization":
            problems.append(f"HPA {name_of(hpa)} does not scale on CPU utilization")
        spec = hpa["spec"]
        if not 1 <= spec.get("minReplicas", 1) <= spec.get("maxReplicas", 0):
            problems.append(f"HPA {name_of(hpa)} minReplicas/maxReplicas out of order")
    return problems


def check_pdbs(objects: list[dict]) -> list[str]:
    """Every Deployment has a PodDisruptionBudget that selects exactly its pods and lets at most one go at a time
    (or keeps at least one)."""
    problems = []
    pdbs = objects_of(objects, "PodDisruptionBudget")
    for deployment in objects_of(objects, "Deployment"):
        matching = [pdb for pdb in pdbs if selector_matches(pdb["spec"].get("selector") or {}, pod_labels(deployment))]
        if not matching:
            problems.append(f"{where(deployment)} has no PodDisruptionBudget")
            continue
        for pdb in matching:
            spec = pdb["spec"]
            if spec.get("maxUnavailable") != 1 and spec.get("minAvailable") != 1:
                problems.append(f"PDB {name_of(pdb)} is neither maxUnavailable 1 nor minAvailable 1")
            others = [item for item in objects_of(objects, "Deployment") if item is not deployment
                      and selector_matches(spec.get("selector") or {}, pod_labels(item))]
            if others:
                problems.append(f"PDB {name_of(pdb)} also selects {', '.join(where(item) for item in others)}")
    return problems


def check_topology_spread(objects: list[dict]) -> list[str]:
    """Every Deployment spreads its pods over zones and hosts, preferring rather than requiring."""
    problems = []
    for deployment in objects_of(objects, "Deployment"):
        constraints = pod_spec(deployment).get("topologySpreadConstraints") or []
        for key in ("topology.kubernetes.io/zone", "kubernetes.io/hostname"):
            found = [item for item in constraints if item.get("topologyKey") == key]
            if not found:
                problems.append(f"{where(deployment)} does not spread over {key}")
                continue
            for constraint in found:
                if constraint.get("whenUnsatisfiable") != "ScheduleAnyway":
                    problems.append(f"{where(deployment)} {key} spread is not ScheduleAnyway")
                if not selector_matches(constraint.get("labelSelector") or {}, pod_labels(deployment)):
                    problems.append(f"{where(deployment)} {key} spread does not select its own pods")
    return problems


def check_drain(objects: list[dict]) -> list[str]:
    """preStop sleeps (the kubelet's sleep action) and the grace period covers it plus the 10 s drain."""
    problems = []
    for deployment in objects_of(objects, "Deployment"):
        grace = pod_spec(deployment).get("terminationGracePeriodSeconds", 30)
        for container in containers(deployment):
            pre_stop = (container.get("lifecycle") or {}).get("preStop") or {}
            seconds = (pre_stop.get("sleep") or {}).get("seconds")
            if seconds is None:
                problems.append(f"{where(deployment, container)} has no preStop sleep action")
                continue
            if seconds < PRESTOP_SECONDS:
                problems.append(f"{where(deployment, container)} preStop sleeps {seconds} s, under {PRESTOP_SECONDS}")
            if not grace > seconds + DRAIN_SECONDS:
                problems.append(
                    f"{where(deployment)} terminationGracePeriodSeconds {grace} is not above preStop {seconds} s "
                    f"+ {DRAIN_SECONDS} s drain")
    return problems


def check_config(objects: list[dict]) -> list[str]:
    """Every Deployment reads one ConfigMap that sets every required variable (DATABASE_URL excepted, which must
    not be in it) with the fixed values."""
    problems = []
    for deployment in objects_of(objects, "Deployment"):
        config = config_map_of(objects, deployment)
        if config is None:
            problems.append(f"{where(deployment)} reads no rendered ConfigMap with envFrom")
            continue
        data = config.get("data") or {}
        missing = [name for name in REQUIRED_VARIABLES if name not in data]
        if missing:
            problems.append(f"ConfigMap {name_of(config)} lacks {', '.join(missing)}")
        if "DATABASE_URL" in data:
            problems.append(f"ConfigMap {name_of(config)} carries DATABASE_URL")
        for name, value in FIXED_VALUES.items():
            if name in data and data[name] != value:
                problems.append(f"ConfigMap {name_of(config)} sets {name}={data[name]}, not {value}")
        if not name_of(config).startswith("passkey-config"):
            problems.append(f"{where(deployment)} reads ConfigMap {name_of(config)}, not passkey-config")
    return problems


def check_database_url(objects: list[dict], source: tuple[str, str] = (DATABASE_SECRET, "DATABASE_URL")) -> list[str]:
    """The three services and the migrate Job take DATABASE_URL from the Secret (SOURCE: its name and key); the
    gateway has none."""
    secret, key = source
    problems = []
    for kind, name in [*(("Deployment", service) for service in GRPC_PORTS), ("Job", MIGRATE_JOB)]:
        workload = named(objects, kind, name)
        if workload is None:
            problems.append(f"no {kind} {name}")
            continue
        for container in containers(workload):
            entry = env_entry(container, "DATABASE_URL")
            reference = ((entry or {}).get("valueFrom") or {}).get("secretKeyRef") or {}
            if reference.get("name") != secret or reference.get("key") != key:
                problems.append(f"{where(workload, container)} does not take DATABASE_URL from secret "
                                f"{secret} key {key}")
            if entry is not None and "value" in entry:
                problems.append(f"{where(workload, container)} has a literal DATABASE_URL")
    gateway = named(objects, "Deployment", GATEWAY)
    for container in containers(gateway) if gateway else []:
        if env_entry(container, "DATABASE_URL") is not None:
            problems.append(f"{where(gateway, container)} has DATABASE_URL")
        for source in container.get("envFrom", []) or []:
            if "secretRef" in source:
                problems.append(f"{where(gateway, container)} reads Secret {source['secretRef'].get('name')}")
    return problems


def network_edges(objects: list[dict]) -> tuple[set, list[str]]:
    """The (destination, port, source) edges the NetworkPolicies allow, and anything they cannot express that way."""
    edges, problems = set(), []
    for policy in objects_of(objects, "NetworkPolicy"):
        spec = policy.get("spec", {})
        if "Ingress" not in (spec.get("policyTypes") or ["Ingress"]):
            continue
        target_labels = (spec.get("podSelector") or {}).get("matchLabels") or {}
        if not target_labels and not (spec.get("podSelector") or {}).get("matchExpressions"):
            if spec.get("ingress"):
                problems.append(f"NetworkPolicy {name_of(policy)} opens every pod")
            continue
        destination = target_labels.get(NAME_LABEL)
        if set(target_labels) == {"cnpg.io/cluster"}:
            destination = f"cnpg:{target_labels['cnpg.io/cluster']}"
        elif destination is None or set(target_labels) != {NAME_LABEL}:
            problems.append(f"NetworkPolicy {name_of(policy)} selects pods by {target_labels}")
            continue
        for rule in spec.get("ingress", []) or []:
            ports = [entry.get("port") for entry in rule.get("ports", []) or []] or ["every port"]
            sources = []
            if "from" not in rule or not rule["from"]:
                sources.append("anywhere")
            for peer in rule.get("from", []) or []:
                pods, namespaces = peer.get("podSelector"), peer.get("namespaceSelector")
                if peer.get("ipBlock"):
                    sources.append(f"ip:{peer['ipBlock'].get('cidr')}")
                elif pods is not None and namespaces is None and set((pods.get("matchLabels") or {})) == {NAME_LABEL} \
                        and not pods.get("matchExpressions"):
                    sources.append(f"pod:{pods['matchLabels'][NAME_LABEL]}")
                elif pods is not None and namespaces is None \
                        and set(pods.get("matchLabels") or {}) == {"cnpg.io/cluster"} and not pods.get("matchExpressions"):
                    sources.append(f"cnpg:{pods['matchLabels']['cnpg.io/cluster']}")
                elif pods is not None and namespaces is not None \
                        and set(namespaces.get("matchLabels") or {}) == {"kubernetes.io/metadata.name"} \
                        and set(pods.get("matchLabels") or {}) == {NAME_LABEL} \
                        and not namespaces.get("matchExpressions") and not pods.get("matchExpressions"):
                    sources.append(f"namespace:{namespaces['matchLabels']['kubernetes.io/metadata.name']}"
                                   f"/pod:{pods['matchLabels'][NAME_LABEL]}")
                elif namespaces is not None and pods is None \
                        and set(namespaces.get("matchLabels") or {}) == {"kubernetes.io/metadata.name"} \
                        and not namespaces.get("matchExpressions"):
                    sources.append(f"namespace:{namespaces['matchLabels']['kubernetes.io/metadata.name']}")
                else:
                    sources.append(f"peer:{peer}")
            edges.update((destination, port, source) for port in ports for source in sources)
    return edges, problems


def check_network_policies(objects: list[dict], expected: set = EXPECTED_EDGES) -> list[str]:
    """A default deny for ingress, and exactly the allowed edges (EXPECTED_EDGES, or an overlay's own); every pod
    label a policy names exists."""
    problems = []
    deny = [policy for policy in objects_of(objects, "NetworkPolicy")
            if (policy["spec"].get("podSelector") or {}) == {} and "Ingress" in (policy["spec"].get("policyTypes") or [])
            and not policy["spec"].get("ingress")]
    if not deny:
        problems.append("no default-deny ingress NetworkPolicy (podSelector {}, policyTypes [Ingress], no rules)")
    edges, unreadable = network_edges(objects)
    problems += unreadable
    for edge in sorted(edges - expected, key=str):
        problems.append(f"unexpected edge: {edge[2]} -> {edge[0]}:{edge[1]}")
    for edge in sorted(expected - edges, key=str):
        problems.append(f"missing edge: {edge[2]} -> {edge[0]}:{edge[1]}")
    # The names in the policies must be the names the pods carry (postgres only exists in local-postgres).
    pod_names = {pod_labels(item).get(NAME_LABEL) for item in workloads(objects)}
    for destination, _, source in edges:
        for name in (destination, source.removeprefix("pod:") if source.startswith("pod:") else None):
            if name and name != "postgres" and not name.startswith("cnpg:") and name not in pod_names:
                problems.append(f"NetworkPolicies name pods {name!r}, which no workload has")
    return problems


def check_labels(objects: list[dict]) -> list[str]:
    """Every object is part-of passkey; workloads' pods carry their component's name; selectors hold only the
    name label, so adding a common label never changes a selector."""
    problems = []
    for item in objects:
        labels = item.get("metadata", {}).get("labels") or {}
        if labels.get(PART_OF_LABEL) != "passkey":
            problems.append(f"{where(item)} is not labelled {PART_OF_LABEL}: passkey")
    expected = {**{name: name for name in DEPLOYMENTS}, MIGRATE_JOB: MIGRATE_JOB, "postgres": "postgres"}
    for workload in workloads(objects):
        labels = pod_labels(workload)
        if labels.get(NAME_LABEL) != expected.get(name_of(workload)):
            problems.append(f"{where(workload)} pods are labelled {NAME_LABEL}: {labels.get(NAME_LABEL)}")
        if labels.get(PART_OF_LABEL) != "passkey":
            problems.append(f"{where(workload)} pods are not labelled {PART_OF_LABEL}: passkey")
        selector = workload.get("spec", {}).get("selector")
        if workload["kind"] != "Job" and (selector or {}).get("matchLabels") != {NAME_LABEL: labels.get(NAME_LABEL)}:
            problems.append(f"{where(workload)} selector is {selector}")
    return problems


def check_monitoring_annotations(objects: list[dict]) -> list[str]:
    """Pod templates of the Deployments say where Prometheus scrapes them."""
    problems = []
    for deployment in objects_of(objects, "Deployment"):
        annotations = deployment["spec"]["template"].get("metadata", {}).get("annotations") or {}
        port = GATEWAY_PORT if name_of(deployment) == GATEWAY else METRICS_PORT
        expected = {"prometheus.io/scrape": "true", "prometheus.io/port": str(port), "prometheus.io/path": "/metrics"}
        for key, value in expected.items():
            if annotations.get(key) != value:
                problems.append(f"{where(deployment)} annotation {key} is {annotations.get(key)!r}, not {value!r}")
        exposed = {entry.get("containerPort") for container in containers(deployment)
                   for entry in container.get("ports", []) or []}
        if port not in exposed:
            problems.append(f"{where(deployment)} does not expose metrics port {port}")
    return problems


def check_migrate_job(objects: list[dict]) -> list[str]:
    job = named(objects, "Job", MIGRATE_JOB)
    if job is None:
        return [f"no Job {MIGRATE_JOB}"]
    problems = []
    if (job["metadata"].get("annotations") or {}).get("argocd.argoproj.io/hook") != "PreSync":
        problems.append(f"Job {MIGRATE_JOB} lacks argocd.argoproj.io/hook: PreSync")
    for field in ("backoffLimit", "ttlSecondsAfterFinished"):
        if not isinstance(job["spec"].get(field), int):
            problems.append(f"Job {MIGRATE_JOB} has no {field}")
    if pod_spec(job).get("restartPolicy") != "OnFailure":
        problems.append(f"Job {MIGRATE_JOB} restartPolicy is {pod_spec(job).get('restartPolicy')!r}")
    # passkey-migrate speaks no gRPC: it gets no gRPC identity (a key it does not need is a key to lose).
    for volume in pod_spec(job).get("volumes", []) or []:
        if ((volume.get("secret") or {}).get("secretName") or "").startswith("passkey-grpc-"):
            problems.append(f"Job {MIGRATE_JOB} mounts the gRPC Secret {volume['secret']['secretName']}")
    return problems


def check_grpc_tls(objects: list[dict]) -> list[str]:
    """Every Deployment (the gateway and the three services) mounts its own Secret passkey-grpc-<name>, whole,
    read-only, at GRPC_TLS_MOUNT, with its files readable by the pod's group only; its ConfigMap's GRPC_TLS_*
    name that Secret's files there and GRPC_PLAINTEXT is false; no container overrides a GRPC_* variable."""
    problems = []
    secrets = {grpc_secret(name) for name in DEPLOYMENTS}
    for name in DEPLOYMENTS:
        deployment = named(objects, "Deployment", name)
        if deployment is None:
            problems.append(f"no Deployment {name}")
            continue
        spec = pod_spec(deployment)
        volumes = {volume.get("name"): volume for volume in spec.get("volumes", []) or []}
        grpc_volumes = {key: volume for key, volume in volumes.items()
                        if (volume.get("secret") or {}).get("secretName") in secrets}
        own = [key for key, volume in grpc_volumes.items() if volume["secret"]["secretName"] == grpc_secret(name)]
        for key, volume in grpc_volumes.items():
            if volume["secret"]["secretName"] != grpc_secret(name):
                problems.append(f"{where(deployment)} mounts another process's identity "
                                f"{volume['secret']['secretName']}")
        if len(own) != 1:
            problems.append(f"{where(deployment)} has {len(own)} volumes of Secret {grpc_secret(name)}, not 1")
            continue
        secret = volumes[own[0]]["secret"]
        if secret.get("items"):
            problems.append(f"{where(deployment)} picks items of {grpc_secret(name)}: mount all of it")
        if secret.get("optional"):
            problems.append(f"{where(deployment)} makes {grpc_secret(name)} optional")
        mode = secret.get("defaultMode", 0o644)
        if mode & 0o007 or not mode & 0o040:
            problems.append(f"{where(deployment)} {grpc_secret(name)} defaultMode {mode:o}: the key must be "
                            "readable by the pod's group (fsGroup) and not by others")
        if pod_spec(deployment).get("securityContext", {}).get("fsGroup") != 65532:
            problems.append(f"{where(deployment)} has no fsGroup 65532, so its group cannot read the key")
        config = (config_map_of(objects, deployment) or {}).get("data") or {}
        for container in containers(deployment):
            mounts = [mount for mount in container.get("volumeMounts", []) or [] if mount.get("name") == own[0]]
            if len(mounts) != 1:
                problems.append(f"{where(deployment, container)} mounts {grpc_secret(name)} {len(mounts)} times")
                continue
            mount = mounts[0]
            if mount.get("mountPath") != GRPC_TLS_MOUNT:
                problems.append(f"{where(deployment, container)} mounts {grpc_secret(name)} at "
                                f"{mount.get('mountPath')}, not {GRPC_TLS_MOUNT}")
            if mount.get("readOnly") is not True:
                problems.append(f"{where(deployment, container)} mounts {grpc_secret(name)} writable")
            if mount.get("subPath") or mount.get("subPathExpr"):
                problems.append(f"{where(deployment, container)} mounts {grpc_secret(name)} with a subPath, "
                                "which the kubelet never updates: a rotation would not reach the process")
            for entry in container.get("env", []) or []:
                if entry.get("name", "").startswith("GRPC_"):
                    problems.append(f"{where(deployment, container)} overrides {entry['name']}")
        for variable, key in GRPC_TLS_FILES.items():
            if config.get(variable) != f"{GRPC_TLS_MOUNT}/{key}":
                problems.append(f"{where(deployment)}: {variable} is {config.get(variable)!r}, not the Secret's "
                                f"{key} at {GRPC_TLS_MOUNT}/{key}")
        if config.get("GRPC_PLAINTEXT", "false").lower() != "false":
            problems.append(f"{where(deployment)} runs gRPC in plaintext (GRPC_PLAINTEXT={config['GRPC_PLAINTEXT']})")
    return problems


def secret_volumes(workload: dict, secret: str) -> list[dict]:
    """The pod's volumes that carry Secret `secret`: a secret volume, or a projected one with it among its sources."""
    found = []
    for volume in pod_spec(workload).get("volumes", []) or []:
        sources = (volume.get("projected") or {}).get("sources", []) or []
        if (volume.get("secret") or {}).get("secretName") == secret or \
                any((source.get("secret") or {}).get("name") == secret for source in sources):
            found.append(volume)
    return found


def secret_in_environment(workload: dict, secret: str) -> list[str]:
    """Where a container of the workload takes variables from `secret` (env secretKeyRef, envFrom secretRef)."""
    places = []
    for container in containers(workload):
        for entry in container.get("env", []) or []:
            if ((entry.get("valueFrom") or {}).get("secretKeyRef") or {}).get("name") == secret:
                places.append(f"{where(workload, container)} variable {entry.get('name')}")
        for source in container.get("envFrom", []) or []:
            if (source.get("secretRef") or {}).get("name") == secret:
                places.append(f"{where(workload, container)} envFrom")
    return places


def check_token_kek(objects: list[dict]) -> list[str]:
    """session-service and verification-service (TOKEN_KEK_DEPLOYMENTS) mount the Secret passkey-token-kek whole
    (no items, not optional), read-only, at TOKEN_KEK_MOUNT and never through a subPath (a replaced Secret would not
    reach the pod), readable by the pod's group only, in every container; their ConfigMap's
    PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE names its key there and no container overrides it. No other pod (the
    gateway, challenge-service, the migrate Job, Postgres) references the Secret, as a volume or in its
    environment, and the key never comes as a variable."""
    problems = []
    for name in TOKEN_KEK_DEPLOYMENTS:
        deployment = named(objects, "Deployment", name)
        if deployment is None:
            problems.append(f"no Deployment {name}")
            continue
        volumes = secret_volumes(deployment, TOKEN_KEK_SECRET)
        if len(volumes) != 1 or "secret" not in volumes[0]:
            problems.append(f"{where(deployment)} has {len(volumes)} volumes of Secret {TOKEN_KEK_SECRET}, not one "
                            "secret volume")
            continue
        volume, secret = volumes[0], volumes[0]["secret"]
        if secret.get("items"):
            problems.append(f"{where(deployment)} picks items of {TOKEN_KEK_SECRET}: mount all of it")
        if secret.get("optional"):
            problems.append(f"{where(deployment)} makes {TOKEN_KEK_SECRET} optional")
        mode = secret.get("defaultMode", 0o644)
        if mode & 0o007 or not mode & 0o040:
            problems.append(f"{where(deployment)} {TOKEN_KEK_SECRET} defaultMode {mode:o}: the key must be readable "
                            "by the pod's group (fsGroup) and not by others")
        if pod_spec(deployment).get("securityContext", {}).get("fsGroup") != 65532:
            problems.append(f"{where(deployment)} has no fsGroup 65532, so its group cannot read the KEK")
        for container in containers(deployment):
            mounts = [mount for mount in container.get("volumeMounts", []) or [] if mount.get("name") == volume["name"]]
            if len(mounts) != 1:
                problems.append(f"{where(deployment, container)} mounts {TOKEN_KEK_SECRET} {len(mounts)} times")
                continue
            mount = mounts[0]
            if mount.get("mountPath") != TOKEN_KEK_MOUNT:
                problems.append(f"{where(deployment, container)} mounts {TOKEN_KEK_SECRET} at "
                                f"{mount.get('mountPath')}, not {TOKEN_KEK_MOUNT}")
            if mount.get("readOnly") is not True:
                problems.append(f"{where(deployment, container)} mounts {TOKEN_KEK_SECRET} writable")
            if mount.get("subPath") or mount.get("subPathExpr"):
                problems.append(f"{where(deployment, container)} mounts {TOKEN_KEK_SECRET} with a subPath, which "
                                "the kubelet never updates")
            if env_entry(container, TOKEN_KEK_VARIABLE) is not None:
                problems.append(f"{where(deployment, container)} overrides {TOKEN_KEK_VARIABLE}")
        config = (config_map_of(objects, deployment) or {}).get("data") or {}
        expected = f"{TOKEN_KEK_MOUNT}/{TOKEN_KEK_KEY}"
        if config.get(TOKEN_KEK_VARIABLE) != expected:
            problems.append(f"{where(deployment)}: {TOKEN_KEK_VARIABLE} is {config.get(TOKEN_KEK_VARIABLE)!r}, not "
                            f"the Secret's key at {expected}")
    for workload in workloads(objects, ("Deployment", "StatefulSet", "DaemonSet", "Job")):
        problems += [f"{place} reads {TOKEN_KEK_SECRET}: the KEK is a mounted file, never a variable"
                     for place in secret_in_environment(workload, TOKEN_KEK_SECRET)]
        if workload["kind"] == "Deployment" and name_of(workload) in TOKEN_KEK_DEPLOYMENTS:
            continue
        if secret_volumes(workload, TOKEN_KEK_SECRET):
            problems.append(f"{where(workload)} mounts {TOKEN_KEK_SECRET}, which only "
                            f"{' and '.join(TOKEN_KEK_DEPLOYMENTS)} need (a key it does not need is a key to lose)")
    return problems


def check_shipped_token_kek(objects: list[dict]) -> list[str]:
    """The overlay ships the Secret passkey-token-kek (local-postgres, as it ships its database's): under that exact
    name (the Deployments name it; no hash suffix), with one key, TOKEN_KEK_KEY, holding 32 bytes as 64 hex
    digits, as openssl rand -hex 32 prints them."""
    secrets = [item for item in objects_of(objects, "Secret") if name_of(item).startswith(TOKEN_KEK_SECRET)]
    if [name_of(item) for item in secrets] != [TOKEN_KEK_SECRET]:
        return [f"Secrets {[name_of(item) for item in secrets]}, not exactly {TOKEN_KEK_SECRET}"]
    secret = secrets[0]
    values = {key: base64.b64decode(value).decode(errors="replace") for key, value in (secret.get("data") or {}).items()}
    values.update(secret.get("stringData") or {})
    if set(values) != {TOKEN_KEK_KEY}:
        return [f"Secret {TOKEN_KEK_SECRET} keys {sorted(values)}, not [{TOKEN_KEK_KEY!r}]"]
    if not re.fullmatch(r"[0-9a-fA-F]{64}", values[TOKEN_KEK_KEY].strip()):
        return [f"Secret {TOKEN_KEK_SECRET} {TOKEN_KEK_KEY} is not 32 bytes as 64 hex digits"]
    if secret.get("type", "Opaque") != "Opaque":
        return [f"Secret {TOKEN_KEK_SECRET} type {secret.get('type')}, not Opaque"]
    return []


def check_images(objects: list[dict], registry: str = "", tag: str | None = "latest") -> list[str]:
    """Each workload runs its own image, under `registry`, with `tag` (None: any tag but latest)."""
    problems = []
    for workload in workloads(objects):
        name = name_of(workload)
        for container in containers(workload):
            image = container.get("image")
            if not image:
                problems.append(f"{where(workload, container)} has no image")
                continue
            repository, _, image_tag = image.rpartition(":") if ":" in image.split("/")[-1] else (image, "", "")
            if repository != registry + IMAGES.get(name, "?"):
                problems.append(f"{where(workload, container)} runs {image}, not {registry}{IMAGES.get(name)}")
            if tag is not None and image_tag != tag:
                problems.append(f"{where(workload, container)} image tag is {image_tag!r}, not {tag!r}")
            if tag is None and image_tag in ("", "latest"):
                problems.append(f"{where(workload, container)} image {image} has no release tag")
    return problems


# --- cert-manager (deploy/kubernetes/cert-manager) and deploy/kubernetes/grpc-secrets ---------------------------

# The fields of cert-manager.io/v1 that these objects may use (cert-manager 1.15-1.18); anything else is a typo.
CERTIFICATE_SPEC_FIELDS = {
    "subject", "literalSubject", "commonName", "duration", "renewBefore", "renewBeforePercentage", "dnsNames",
    "ipAddresses", "uris", "otherNames", "emailAddresses", "secretName", "secretTemplate", "keystores", "issuerRef",
    "isCA", "usages", "privateKey", "encodeUsagesInRequest", "revisionHistoryLimit", "additionalOutputFormats",
    "nameConstraints"}
PRIVATE_KEY_FIELDS = {"rotationPolicy", "encoding", "algorithm", "size"}
ISSUER_REF_FIELDS = {"name", "kind", "group"}
SECRET_TEMPLATE_FIELDS = {"annotations", "labels"}
ISSUER_SPEC_FIELDS = {"acme", "ca", "vault", "selfSigned", "venafi"}
CA_ISSUER_FIELDS = {"secretName", "crlDistributionPoints", "ocspServers", "issuingCertificateURLs"}
SELF_SIGNED_FIELDS = {"crlDistributionPoints"}
KEY_USAGES = {
    "signing", "digital signature", "content commitment", "key encipherment", "key agreement", "data encipherment",
    "cert sign", "crl sign", "encipher only", "decipher only", "any", "server auth", "client auth", "code signing",
    "email protection", "s/mime", "ipsec end system", "ipsec tunnel", "ipsec user", "timestamping", "ocsp signing",
    "microsoft sgc", "netscape sgc"}
# What a process certificate must be: both ends of mutual TLS, an ECDSA P-256 key made anew at every renewal, a
# short life renewed well before its end.
PROCESS_USAGES = {"digital signature", "server auth", "client auth"}
MAX_PROCESS_CERTIFICATE_HOURS = 48
# The namespace the overlays put the Deployments in, where the Secrets must be.
NAMESPACE = "passkeys"


def go_duration_hours(text) -> float | None:
    """A Go duration as cert-manager reads it ("24h", "1h30m", "90m"), in hours; None when it is not one."""
    if not isinstance(text, str) or not re.fullmatch(r"(\d+(\.\d+)?(h|m|s|ms))+", text):
        return None
    scale = {"h": 1.0, "m": 1 / 60, "s": 1 / 3600, "ms": 1 / 3_600_000}
    return sum(float(number) * scale[unit] for number, _, unit in re.findall(r"(\d+(\.\d+)?)(ms|h|m|s)", text))


def unknown_fields(label: str, mapping, allowed: set[str]) -> list[str]:
    if not isinstance(mapping, dict):
        return [f"{label} is not a mapping"]
    return [f"{label} has an unknown field {key!r}" for key in sorted(set(mapping) - allowed)]


def check_cert_manager_fields(objects: list[dict]) -> list[str]:
    """kubernetes-validate has no schema for cert-manager's CRDs: every object is a known kind with known fields,
    usages and key algorithms are cert-manager's words, durations are Go durations, renewBefore is below duration,
    and every issuerRef names an Issuer rendered here."""
    problems = []
    issuers = {name_of(item) for item in objects_of(objects, "Issuer")}
    for item in objects:
        label = where(item)
        if (item.get("apiVersion"), item.get("kind")) not in CERT_MANAGER_KINDS:
            problems.append(f"{label}: not a cert-manager.io/v1 Certificate or Issuer")
            continue
        problems += unknown_fields(f"{label} metadata", item.get("metadata") or {},
                                   {"name", "namespace", "labels", "annotations"})
        spec = item.get("spec") or {}
        if item["kind"] == "Issuer":
            problems += unknown_fields(f"{label} spec", spec, ISSUER_SPEC_FIELDS)
            if len(spec) != 1:
                problems.append(f"{label} has {len(spec)} issuer types, not 1")
            if "ca" in spec:
                problems += unknown_fields(f"{label} spec.ca", spec["ca"], CA_ISSUER_FIELDS)
                if not (spec["ca"] or {}).get("secretName"):
                    problems.append(f"{label} spec.ca has no secretName")
            if "selfSigned" in spec:
                problems += unknown_fields(f"{label} spec.selfSigned", spec["selfSigned"], SELF_SIGNED_FIELDS)
            continue
        problems += unknown_fields(f"{label} spec", spec, CERTIFICATE_SPEC_FIELDS)
        problems += unknown_fields(f"{label} spec.privateKey", spec.get("privateKey") or {}, PRIVATE_KEY_FIELDS)
        problems += unknown_fields(f"{label} spec.issuerRef", spec.get("issuerRef") or {}, ISSUER_REF_FIELDS)
        problems += unknown_fields(f"{label} spec.secretTemplate", spec.get("secretTemplate") or {},
                                   SECRET_TEMPLATE_FIELDS)
        if not spec.get("secretName"):
            problems.append(f"{label} has no secretName")
        if not any(spec.get(key) for key in ("commonName", "dnsNames", "uris", "ipAddresses", "emailAddresses")):
            problems.append(f"{label} names no subject (commonName, dnsNames, uris, ...)")
        for usage in spec.get("usages") or []:
            if usage not in KEY_USAGES:
                problems.append(f"{label} usage {usage!r} is not one of cert-manager's")
        key = spec.get("privateKey") or {}
        if key.get("algorithm", "RSA") not in ("RSA", "ECDSA", "Ed25519"):
            problems.append(f"{label} privateKey.algorithm {key.get('algorithm')!r}")
        if key.get("encoding", "PKCS1") not in ("PKCS1", "PKCS8"):
            problems.append(f"{label} privateKey.encoding {key.get('encoding')!r}")
        if key.get("rotationPolicy", "Always") not in ("Never", "Always"):
            problems.append(f"{label} privateKey.rotationPolicy {key.get('rotationPolicy')!r}")
        duration = go_duration_hours(spec.get("duration", "2160h"))
        renew = go_duration_hours(spec.get("renewBefore", "1h"))
        if duration is None or renew is None:
            problems.append(f"{label} duration {spec.get('duration')!r} or renewBefore {spec.get('renewBefore')!r} "
                            "is not a Go duration")
        elif not renew < duration:
            problems.append(f"{label} renewBefore {spec.get('renewBefore')} is not below duration {spec.get('duration')}")
        reference = spec.get("issuerRef") or {}
        if reference.get("kind", "Issuer") != "Issuer" or reference.get("group", "cert-manager.io") != "cert-manager.io" \
                or reference.get("name") not in issuers:
            problems.append(f"{label} issuerRef {reference} names no Issuer rendered here")
    return problems


def deployment_secret(workload: dict) -> str | None:
    """The passkey-grpc-* Secret a workload mounts (the first), or None."""
    for volume in pod_spec(workload).get("volumes", []) or []:
        name = (volume.get("secret") or {}).get("secretName") or ""
        if name.startswith("passkey-grpc-"):
            return name
    return None


def check_certificates(certificates: list[dict], objects: list[dict]) -> list[str]:
    """For every Deployment of the rendered overlay `objects`, a Certificate in its namespace issues the Secret it
    mounts, named after it, for the SPIFFE ID of the process (in the ConfigMap's trust domain) and the DNS names
    <name>.<trust domain> and its Service's; both TLS uses, ECDSA P-256 made anew at every renewal, a short life.
    They are issued by a CA Issuer whose CA Certificate keeps its key, and no Certificate issues a Secret nothing
    mounts (other than the CA's)."""
    problems = []
    by_secret: dict[str, list[dict]] = {}
    for certificate in objects_of(certificates, "Certificate"):
        by_secret.setdefault((certificate.get("spec") or {}).get("secretName"), []).append(certificate)
    issuers = {name_of(item): item.get("spec") or {} for item in objects_of(certificates, "Issuer")}
    mounted = set()
    for name in DEPLOYMENTS:
        deployment = named(objects, "Deployment", name)
        if deployment is None:
            problems.append(f"no Deployment {name}")
            continue
        secret = deployment_secret(deployment)
        mounted.add(secret)
        issuing = by_secret.get(secret, [])
        if len(issuing) != 1:
            problems.append(f"{len(issuing)} Certificates issue {where(deployment)}'s Secret {secret}, not 1")
            continue
        certificate = issuing[0]
        spec, label = certificate["spec"], where(certificate)
        trust_domain = ((config_map_of(objects, deployment) or {}).get("data") or {}).get(
            "GRPC_TRUST_DOMAIN", TRUST_DOMAIN)
        namespace = deployment["metadata"].get("namespace")
        if name_of(certificate) != secret:
            problems.append(f"{label} issues Secret {secret}: the names differ")
        if namespace and certificate["metadata"].get("namespace") != namespace:
            problems.append(f"{label} is in namespace {certificate['metadata'].get('namespace')!r}, the Deployment "
                            f"in {namespace!r}")
        if spec.get("uris") != [spiffe_id(name, trust_domain)]:
            problems.append(f"{label} uris {spec.get('uris')}, not [{spiffe_id(name, trust_domain)}]")
        dns_names = spec.get("dnsNames") or []
        if f"{name}.{trust_domain}" not in dns_names:
            problems.append(f"{label} lacks the DNS name {name}.{trust_domain}")
        service_name = f"{name}.{namespace or NAMESPACE}.svc.cluster.local"
        if named(objects, "Service", name) is None or service_name not in dns_names:
            problems.append(f"{label} lacks its Service's DNS name {service_name}")
        others = [other for other in DEPLOYMENTS if other != name
                  and any(entry.startswith(f"{other}.") for entry in dns_names)]
        if others:
            problems.append(f"{label} also names {', '.join(others)}")
        if set(spec.get("usages") or []) != PROCESS_USAGES:
            problems.append(f"{label} usages {spec.get('usages')}, not {sorted(PROCESS_USAGES)}")
        if spec.get("isCA"):
            problems.append(f"{label} is a CA")
        key = spec.get("privateKey") or {}
        if (key.get("algorithm"), key.get("size")) != ("ECDSA", 256):
            problems.append(f"{label} key {key.get('algorithm')} {key.get('size')}, not ECDSA 256 (P-256)")
        if key.get("rotationPolicy") != "Always":
            problems.append(f"{label} keeps its key across renewals (rotationPolicy {key.get('rotationPolicy')!r})")
        duration = go_duration_hours(spec.get("duration"))
        renew = go_duration_hours(spec.get("renewBefore"))
        if duration is None or duration > MAX_PROCESS_CERTIFICATE_HOURS:
            problems.append(f"{label} duration {spec.get('duration')!r} is not at most "
                            f"{MAX_PROCESS_CERTIFICATE_HOURS}h")
        elif renew is None or not duration / 4 <= renew < duration:
            problems.append(f"{label} renewBefore {spec.get('renewBefore')!r} is not between a quarter of its "
                            "duration and all of it")
        issuer = issuers.get((spec.get("issuerRef") or {}).get("name"), {})
        ca_secret = (issuer.get("ca") or {}).get("secretName")
        ca_certificates = by_secret.get(ca_secret, []) if ca_secret else []
        if not ca_certificates:
            problems.append(f"{label} is not issued by a CA Issuer whose CA Certificate is rendered here")
        for ca in ca_certificates:
            ca_spec = ca.get("spec") or {}
            if not ca_spec.get("isCA"):
                problems.append(f"{where(ca)} is the CA of {label} but not isCA")
            if (ca_spec.get("privateKey") or {}).get("rotationPolicy") != "Never":
                problems.append(f"{where(ca)} makes a new CA key at renewal: the pods would stop trusting each "
                                "other until every Secret had the new ca.crt")
            mounted.add(ca_secret)
    for secret in sorted(set(by_secret) - mounted, key=str):
        problems.append(f"Certificate(s) {[name_of(item) for item in by_secret[secret]]} issue Secret {secret}, "
                        "which no Deployment mounts")
    return problems


def openssl(*arguments: str, data: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["openssl", *arguments], input=data, capture_output=True, timeout=30)


def certificate_names(pem: bytes) -> tuple[list[str], list[str]]:
    """(URI SANs, DNS SANs) of a PEM certificate."""
    result = openssl("x509", "-noout", "-ext", "subjectAltName", data=pem)
    text = result.stdout.decode()
    return re.findall(r"URI:([^,\s]+)", text), re.findall(r"DNS:([^,\s]+)", text)


def check_grpc_secret_set(secrets: list[dict], objects: list[dict], trust_domain: str = TRUST_DOMAIN,
                          work: Path | None = None) -> list[str]:
    """The Secrets a cluster without cert-manager gets: for every Deployment of `objects`, the Secret it mounts,
    of type kubernetes.io/tls with exactly tls.crt, tls.key and ca.crt; the certificate names the process's
    SPIFFE ID, its key is tls.key's, it chains to ca.crt for both TLS uses, and every Secret has the same ca.crt."""
    problems = []
    by_name = {name_of(secret): secret for secret in objects_of(secrets, "Secret")}
    expected = {deployment_secret(named(objects, "Deployment", name)): name for name in DEPLOYMENTS}
    if set(by_name) != set(expected):
        problems.append(f"Secrets {sorted(by_name)}, not the Deployments' {sorted(expected, key=str)}")
    authorities = set()
    for secret_name, name in expected.items():
        secret = by_name.get(secret_name)
        if secret is None:
            continue
        data = secret.get("data") or {}
        if secret.get("type") != "kubernetes.io/tls":
            problems.append(f"Secret {secret_name} type {secret.get('type')!r}, not kubernetes.io/tls")
        if set(data) != GRPC_SECRET_KEYS or secret.get("stringData"):
            problems.append(f"Secret {secret_name} keys {sorted(data)}, not {sorted(GRPC_SECRET_KEYS)}")
            continue
        try:
            files = {key: base64.b64decode(value, validate=True) for key, value in data.items()}
        except (ValueError, TypeError):
            problems.append(f"Secret {secret_name} data is not base64")
            continue
        authorities.add(files["ca.crt"])
        uris, dns_names = certificate_names(files["tls.crt"])
        if uris != [spiffe_id(name, trust_domain)]:
            problems.append(f"Secret {secret_name} certificate URIs {uris}, not [{spiffe_id(name, trust_domain)}]")
        if f"{name}.{trust_domain}" not in dns_names:
            problems.append(f"Secret {secret_name} certificate lacks DNS {name}.{trust_domain}")
        certificate_key = openssl("x509", "-noout", "-pubkey", data=files["tls.crt"]).stdout
        private_key = openssl("pkey", "-pubout", data=files["tls.key"]).stdout
        if not certificate_key or certificate_key != private_key:
            problems.append(f"Secret {secret_name} tls.key is not the key of tls.crt")
        assert work is not None, "check_grpc_secret_set needs a directory for openssl verify"
        (work / "ca.crt").write_bytes(files["ca.crt"])
        (work / "tls.crt").write_bytes(files["tls.crt"])
        for purpose in ("sslserver", "sslclient"):
            result = openssl("verify", "-CAfile", str(work / "ca.crt"), "-purpose", purpose, str(work / "tls.crt"))
            if result.returncode != 0:
                problems.append(f"Secret {secret_name} tls.crt does not verify against its ca.crt for {purpose}: "
                                f"{result.stdout.decode().strip()} {result.stderr.decode().strip()}")
    if len(authorities) > 1:
        problems.append(f"the Secrets carry {len(authorities)} different ca.crt: the processes would refuse each other")
    return problems


def run_grpc_secrets(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(GRPC_TLS_SCRIPT), *arguments], capture_output=True, text=True, timeout=120)


def check_replicas(objects: list[dict], expected: dict[str, int]) -> list[str]:
    problems = []
    for name, count in expected.items():
        deployment = named(objects, "Deployment", name)
        replicas = deployment["spec"].get("replicas") if deployment else None
        if replicas != count:
            problems.append(f"Deployment {name} has {replicas} replicas, not {count}")
    return problems


# ---------------------------------------------------------------------------------------------------------------
# Positive tests


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


# ---------------------------------------------------------------------------------------------------------------
# Negative tests: one thing broken, and the same functions reject it.


def first(objects: list[dict], kind: str, name: str) -> dict:
    item = named(objects, kind, name)
    assert item is not None
    return item


@pytest.fixture
def base(rendered) -> list[dict]:
    return copy.deepcopy(rendered["base"])


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


def container_of(objects, name):
    return first(objects, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]


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


# ---------------------------------------------------------------------------------------------------------------
# overlays/ha: the CloudNativePG Cluster, its backups and the services' DATABASE_URL.
#
# The custom resources have no schema in kubernetes-validate, so their fields are checked here against the fields
# of the CloudNativePG (postgresql.cnpg.io/v1) and Barman Cloud plugin (barmancloud.cnpg.io/v1) APIs that may
# appear. A nested dict is a field with fields of its own, a list of one dict a list of such objects, None a value
# that is not looked into (a string, a number, a map of parameters, or a Kubernetes type the API embeds).

SECRET_KEY_REFERENCE = {"name": None, "key": None}
CNPG_FIELDS = {
    "Cluster": {
        "instances": None, "imageName": None, "imageCatalogRef": None, "imagePullPolicy": None,
        "imagePullSecrets": None, "primaryUpdateStrategy": None, "primaryUpdateMethod": None,
        "enableSuperuserAccess": None, "superuserSecret": None, "description": None, "postgresUID": None,
        "postgresGID": None, "startDelay": None, "stopDelay": None, "smartShutdownTimeout": None,
        "switchoverDelay": None, "failoverDelay": None, "livenessProbeTimeout": None, "priorityClassName": None,
        "schedulerName": None, "logLevel": None, "enablePDB": None, "env": None, "envFrom": None,
        "minSyncReplicas": None, "maxSyncReplicas": None, "certificates": None, "managed": None, "replica": None,
        "externalClusters": None, "monitoring": None, "nodeMaintenanceWindow": None, "probes": None,
        "serviceAccountTemplate": None, "projectedVolumeTemplate": None, "ephemeralVolumeSource": None,
        "ephemeralVolumesSizeLimit": None, "seccompProfile": None, "podSecurityContext": None,
        "securityContext": None, "tablespaces": None, "topologySpreadConstraints": None, "resources": None,
        "backup": None,
        "bootstrap": {
            "initdb": {
                "database": None, "owner": None, "secret": None, "options": None, "dataChecksums": None,
                "encoding": None, "locale": None, "localeCollate": None, "localeCType": None,
                "localeProvider": None, "icuLocale": None, "icuRules": None, "builtinLocale": None,
                "walSegmentSize": None, "postInitSQL": None, "postInitApplicationSQL": None,
                "postInitTemplateSQL": None, "postInitSQLRefs": None, "postInitApplicationSQLRefs": None,
                "postInitTemplateSQLRefs": None, "import": None,
            },
            "recovery": None, "pg_basebackup": None,
        },
        "postgresql": {
            "parameters": None, "pg_hba": None, "pg_ident": None, "shared_preload_libraries": None,
            "syncReplicaElectionConstraint": None, "ldap": None, "promotionTimeout": None,
            "enableAlterSystem": None, "extensions": None,
            "synchronous": {
                "method": None, "number": None, "maxStandbyNamesFromCluster": None, "standbyNamesPre": None,
                "standbyNamesPost": None, "dataDurability": None, "failoverQuorum": None,
            },
        },
        "plugins": [{"name": None, "enabled": None, "isWALArchiver": None, "parameters": None}],
        "storage": {"size": None, "storageClass": None, "resizeInUseVolumes": None, "pvcTemplate": None},
        "walStorage": {"size": None, "storageClass": None, "resizeInUseVolumes": None, "pvcTemplate": None},
        "affinity": {
            "enablePodAntiAffinity": None, "podAntiAffinityType": None, "topologyKey": None, "nodeSelector": None,
            "nodeAffinity": None, "tolerations": None, "additionalPodAntiAffinity": None,
            "additionalPodAffinity": None,
        },
        "inheritedMetadata": {"labels": None, "annotations": None},
    },
    "ScheduledBackup": {
        "schedule": None, "suspend": None, "immediate": None, "cluster": {"name": None},
        "backupOwnerReference": None, "target": None, "method": None, "online": None,
        "onlineConfiguration": None, "pluginConfiguration": {"name": None, "parameters": None},
    },
    "ObjectStore": {
        "retentionPolicy": None, "instanceSidecarConfiguration": None,
        "configuration": {
            "destinationPath": None, "endpointURL": None, "endpointCA": None, "serverName": None,
            "tags": None, "historyTags": None, "azureCredentials": None, "googleCredentials": None,
            "s3Credentials": {
                "accessKeyId": SECRET_KEY_REFERENCE, "secretAccessKey": SECRET_KEY_REFERENCE,
                "region": SECRET_KEY_REFERENCE, "sessionToken": SECRET_KEY_REFERENCE, "inheritFromIAMRole": None,
            },
            "wal": {"compression": None, "encryption": None, "maxParallel": None,
                    "archiveAdditionalCommandArgs": None, "restoreAdditionalCommandArgs": None},
            "data": {"compression": None, "encryption": None, "jobs": None, "immediateCheckpoint": None,
                     "additionalCommandArgs": None},
        },
    },
}
CNPG_TOP_LEVEL_FIELDS = {"apiVersion", "kind", "metadata", "spec"}


def unknown_cnpg_fields(value, fields, path: str) -> list[str]:
    if fields is None:
        return []
    if isinstance(fields, list):
        if not isinstance(value, list):
            return [f"{path} is not a list"]
        return [problem for index, item in enumerate(value)
                for problem in unknown_cnpg_fields(item, fields[0], f"{path}[{index}]")]
    if not isinstance(value, dict):
        return [f"{path} is not an object"]
    problems = []
    for key, item in value.items():
        if key not in fields:
            problems.append(f"{path}.{key} is not a field")
        else:
            problems += unknown_cnpg_fields(item, fields[key], f"{path}.{key}")
    return problems


def check_cnpg_fields(objects: list[dict]) -> list[str]:
    """Every CloudNativePG and Barman Cloud object has only fields its API has."""
    problems = []
    for item in objects:
        if (item.get("apiVersion"), item.get("kind")) not in CNPG_KINDS:
            continue
        label = f"{item['kind']}/{item['metadata'].get('name')}"
        problems += [f"{label}: {key} is not a field" for key in set(item) - CNPG_TOP_LEVEL_FIELDS]
        problems += unknown_cnpg_fields(item.get("spec"), CNPG_FIELDS[item["kind"]], f"{label}: spec")
    for kind in ("Cluster", "ScheduledBackup", "ObjectStore"):
        for item in objects_of(objects, kind):
            if (item.get("apiVersion"), kind) not in CNPG_KINDS:
                problems.append(f"{kind}/{name_of(item)} has apiVersion {item.get('apiVersion')}")
    return problems


def schedule_fields(schedule: str) -> int:
    return len(str(schedule).split())


def check_cnpg_cluster(objects: list[dict]) -> list[str]:
    """One Cluster of three instances that never share a node, one synchronous standby with commits waiting for
    it, the passkey database owned by passkey, WAL archived and base backups taken by the Barman Cloud plugin into
    a rendered ObjectStore on a schedule, and the services' DATABASE_URL from the Cluster's <name>-app Secret (uri,
    which names the -rw Service). No Secret (so no password) is shipped."""
    clusters = objects_of(objects, "Cluster")
    if len(clusters) != 1:
        return [f"{len(clusters)} Clusters rendered, not one"]
    cluster = clusters[0]
    name, spec = name_of(cluster), cluster.get("spec") or {}
    problems = []
    if name != CNPG_CLUSTER:
        problems.append(f"the Cluster is {name}, not {CNPG_CLUSTER}")
    if spec.get("instances") != 3:
        problems.append(f"Cluster/{name} runs {spec.get('instances')} instances, not 3")

    postgresql = spec.get("postgresql") or {}
    synchronous = postgresql.get("synchronous")
    legacy = ("minSyncReplicas" in spec) or ("maxSyncReplicas" in spec)
    if synchronous and legacy:
        problems.append(f"Cluster/{name} sets both postgresql.synchronous and min/maxSyncReplicas")
    elif synchronous:
        if synchronous.get("method") not in ("any", "first"):
            problems.append(f"Cluster/{name} synchronous.method is {synchronous.get('method')!r}")
        if synchronous.get("number") != 1:
            problems.append(f"Cluster/{name} synchronous.number is {synchronous.get('number')}, not 1")
        if synchronous.get("dataDurability", "required") not in ("required", "preferred"):
            problems.append(f"Cluster/{name} synchronous.dataDurability is {synchronous.get('dataDurability')!r}")
    elif legacy:
        if (spec.get("minSyncReplicas"), spec.get("maxSyncReplicas")) != (1, 1):
            problems.append(f"Cluster/{name} min/maxSyncReplicas are "
                            f"{spec.get('minSyncReplicas')}/{spec.get('maxSyncReplicas')}, not 1/1")
    else:
        problems.append(f"Cluster/{name} has no synchronous standby")
    commit = str((postgresql.get("parameters") or {}).get("synchronous_commit", "on"))
    if commit not in ("on", "remote_apply"):
        problems.append(f"Cluster/{name} synchronous_commit is {commit}: a commit would not wait for the standby")

    initdb = (spec.get("bootstrap") or {}).get("initdb") or {}
    if (initdb.get("database"), initdb.get("owner")) != ("passkey", "passkey"):
        problems.append(f"Cluster/{name} makes database {initdb.get('database')} owned by {initdb.get('owner')}, "
                        "not passkey owned by passkey")
    affinity = spec.get("affinity") or {}
    if affinity.get("enablePodAntiAffinity") is not True or affinity.get("podAntiAffinityType") != "required":
        problems.append(f"Cluster/{name} may put two instances on one node")

    archivers = [plugin for plugin in spec.get("plugins") or [] if plugin.get("isWALArchiver")]
    if len(archivers) != 1 or archivers[0].get("name") != BARMAN_PLUGIN:
        problems.append(f"Cluster/{name} has no {BARMAN_PLUGIN} plugin archiving its WAL")
    else:
        store_name = (archivers[0].get("parameters") or {}).get("barmanObjectName")
        store = named(objects, "ObjectStore", store_name) if store_name else None
        if store is None:
            problems.append(f"Cluster/{name} archives to ObjectStore {store_name!r}, which is not rendered")
        else:
            configuration = (store.get("spec") or {}).get("configuration") or {}
            if not configuration.get("destinationPath"):
                problems.append(f"ObjectStore/{store_name} has no destinationPath")
            if not (store.get("spec") or {}).get("retentionPolicy"):
                problems.append(f"ObjectStore/{store_name} has no retentionPolicy")
            credentials = configuration.get("s3Credentials") or {}
            if not credentials.get("inheritFromIAMRole"):
                for key in ("accessKeyId", "secretAccessKey"):
                    reference = credentials.get(key) or {}
                    if not (reference.get("name") and reference.get("key")):
                        problems.append(f"ObjectStore/{store_name} s3Credentials.{key} names no Secret key")
    schedules = [backup for backup in objects_of(objects, "ScheduledBackup")
                 if ((backup.get("spec") or {}).get("cluster") or {}).get("name") == name]
    if not schedules:
        problems.append(f"no ScheduledBackup backs up Cluster/{name}")
    for backup in schedules:
        backup_spec = backup["spec"]
        if backup_spec.get("method") != "plugin" or \
                (backup_spec.get("pluginConfiguration") or {}).get("name") != BARMAN_PLUGIN:
            problems.append(f"ScheduledBackup/{name_of(backup)} does not back up through {BARMAN_PLUGIN}")
        if schedule_fields(backup_spec.get("schedule", "")) != 6:
            problems.append(f"ScheduledBackup/{name_of(backup)} schedule {backup_spec.get('schedule')!r} is not "
                            "six fields (CloudNativePG's start with seconds)")

    secret = f"{name}-app"
    for kind, workload_name in [*(("Deployment", service) for service in GRPC_PORTS), ("Job", MIGRATE_JOB)]:
        workload = named(objects, kind, workload_name)
        for container in containers(workload) if workload else []:
            reference = (((env_entry(container, "DATABASE_URL") or {}).get("valueFrom") or {})
                         .get("secretKeyRef") or {})
            if (reference.get("name"), reference.get("key")) != (secret, "uri"):
                problems.append(f"{where(workload, container)} takes DATABASE_URL from "
                                f"{reference.get('name')}/{reference.get('key')}, not {secret}/uri")
    for item in objects_of(objects, "Secret"):
        problems.append(f"Secret/{name_of(item)} is shipped: the operator makes the database's credentials")
    for item in objects:
        if item.get("kind") != "Namespace" and item["metadata"].get("namespace") != "passkeys":
            problems.append(f"{where(item)} is not in namespace passkeys")
    return problems


def test_ha_cnpg_objects_have_only_known_fields(rendered):
    assert check_cnpg_fields(rendered["ha"]) == []
    kinds = {(item["apiVersion"], item["kind"]) for item in rendered["ha"]}
    assert CNPG_KINDS <= kinds


def test_ha_runs_a_three_instance_cluster_with_a_sync_standby_and_backups(rendered):
    assert check_cnpg_cluster(rendered["ha"]) == []


def test_ha_adds_only_the_database_to_the_base(rendered):
    """The same workloads as the base (the ha overlay changes where DATABASE_URL comes from, nothing else about
    them), no Postgres StatefulSet of its own."""
    def workload_names(objects):
        return sorted((item["kind"], name_of(item)) for item in workloads(objects))
    assert workload_names(rendered["ha"]) == workload_names(rendered["base"])
    assert objects_of(rendered["ha"], "StatefulSet") == []


def ha_cluster_spec(objects):
    return first(objects, "Cluster", CNPG_CLUSTER)["spec"]


def two_instances(objects):
    ha_cluster_spec(objects)["instances"] = 2


def no_synchronous_standby(objects):
    del ha_cluster_spec(objects)["postgresql"]["synchronous"]


def two_synchronous_standbys(objects):
    ha_cluster_spec(objects)["postgresql"]["synchronous"]["number"] = 2


def both_synchronous_styles(objects):
    ha_cluster_spec(objects).update(minSyncReplicas=1, maxSyncReplicas=1)


def asynchronous_commit(objects):
    ha_cluster_spec(objects)["postgresql"]["parameters"]["synchronous_commit"] = "local"


def instances_on_one_node(objects):
    ha_cluster_spec(objects)["affinity"]["podAntiAffinityType"] = "preferred"


def database_named_app(objects):
    ha_cluster_spec(objects)["bootstrap"]["initdb"]["database"] = "app"


def wal_not_archived(objects):
    ha_cluster_spec(objects)["plugins"][0]["isWALArchiver"] = False


def archive_to_a_missing_store(objects):
    ha_cluster_spec(objects)["plugins"][0]["parameters"]["barmanObjectName"] = "other-store"


def credentials_inline(objects):
    first(objects, "ObjectStore", "passkey-db-backups")["spec"]["configuration"]["s3Credentials"]["accessKeyId"] = {}


def backups_of_another_cluster(objects):
    objects_of(objects, "ScheduledBackup")[0]["spec"]["cluster"]["name"] = "other-db"


def five_field_schedule(objects):
    objects_of(objects, "ScheduledBackup")[0]["spec"]["schedule"] = "0 3 * * *"


def in_tree_backup_method(objects):
    objects_of(objects, "ScheduledBackup")[0]["spec"]["method"] = "barmanObjectStore"


def services_on_the_old_secret(objects):
    reference = env_entry(container_of(objects, "session-service"), "DATABASE_URL")["valueFrom"]["secretKeyRef"]
    reference.update(name=DATABASE_SECRET, key="DATABASE_URL")


def uri_key_misspelt(objects):
    job = first(objects, "Job", MIGRATE_JOB)
    env_entry(containers(job)[0], "DATABASE_URL")["valueFrom"]["secretKeyRef"]["key"] = "url"


def misspelt_cluster_field(objects):
    spec = ha_cluster_spec(objects)
    spec["instance"] = spec.pop("instances")


def misspelt_synchronous_field(objects):
    synchronous = ha_cluster_spec(objects)["postgresql"]["synchronous"]
    synchronous["methods"] = synchronous.pop("method")


def misspelt_object_store_field(objects):
    configuration = first(objects, "ObjectStore", "passkey-db-backups")["spec"]["configuration"]
    configuration["destinationpath"] = configuration.pop("destinationPath")


def database_open_to_the_gateway(objects):
    policy = first(objects, "NetworkPolicy", "passkey-db-ingress")
    policy["spec"]["ingress"][0]["from"].append({"podSelector": {"matchLabels": {NAME_LABEL: GATEWAY}}})


def operator_not_admitted(objects):
    policy = first(objects, "NetworkPolicy", "passkey-db-ingress")
    policy["spec"]["ingress"] = [rule for rule in policy["spec"]["ingress"]
                                 if "cnpg-system" not in str(rule.get("from"))]


def a_password_shipped(objects):
    objects.append({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "passkey-db-app",
                    "namespace": "passkeys"}, "stringData": {"uri": "postgresql://passkey:secret@x/passkey"}})


def check_ha_network_policies(objects):
    return check_network_policies(objects, HA_EXPECTED_EDGES)


def check_ha_database_url(objects):
    return check_database_url(objects, DATABASE_URL_SOURCE["ha"])


HA_BROKEN = [
    (two_instances, check_cnpg_cluster),
    (no_synchronous_standby, check_cnpg_cluster),
    (two_synchronous_standbys, check_cnpg_cluster),
    (both_synchronous_styles, check_cnpg_cluster),
    (asynchronous_commit, check_cnpg_cluster),
    (instances_on_one_node, check_cnpg_cluster),
    (database_named_app, check_cnpg_cluster),
    (wal_not_archived, check_cnpg_cluster),
    (archive_to_a_missing_store, check_cnpg_cluster),
    (credentials_inline, check_cnpg_cluster),
    (backups_of_another_cluster, check_cnpg_cluster),
    (five_field_schedule, check_cnpg_cluster),
    (in_tree_backup_method, check_cnpg_cluster),
    (services_on_the_old_secret, check_cnpg_cluster),
    (uri_key_misspelt, check_cnpg_cluster),
    (a_password_shipped, check_cnpg_cluster),
    (misspelt_cluster_field, check_cnpg_fields),
    (misspelt_synchronous_field, check_cnpg_fields),
    (misspelt_object_store_field, check_cnpg_fields),
    (database_open_to_the_gateway, check_ha_network_policies),
    (operator_not_admitted, check_ha_network_policies),
    (services_on_the_old_secret, check_ha_database_url),
]


@pytest.mark.parametrize("breakage, check", HA_BROKEN,
                         ids=[f"{b.__name__}-{c.__name__}" for b, c in HA_BROKEN])
def test_a_broken_ha_overlay_fails_its_check(rendered, breakage, check):
    objects = copy.deepcopy(rendered["ha"])
    assert check(objects) == [], "the rendered ha overlay passes before it is broken"
    breakage(objects)
    assert check(objects), f"the check accepted the ha overlay after {breakage.__name__}"
