"""What the Kubernetes manifests in deploy/kubernetes must hold: the objects, ports, images, Secrets, network
edges and configuration variables the checks in kubernetes_checks.py compare the rendered overlays with.

The configuration variables are listed here (REQUIRED_VARIABLES, built from DEPLOYMENT_VARIABLES and
RUNTIME_VARIABLES) rather than parsed out of docs/configuration.md at run time, so a variable added to the
executables is a deliberate change to the manifests; test_variable_list_mirrors_the_configuration_doc compares
this list with the document's table.
"""

from __future__ import annotations

from conftest import KUBERNETES_DIR, OVERLAYS

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
RUNTIME_VARIABLES = ["METRICS_LISTEN", "GATEWAY_METRICS_LISTEN", "EVENT_LOOP_THREADS", "DATABASE_POOL_SIZE", "SERVICE_DISCOVERY_INTERVAL"]
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
    "GATEWAY_METRICS_LISTEN": "0.0.0.0:9090",
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
    ("gateway", METRICS_PORT, "namespace:monitoring"),
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
