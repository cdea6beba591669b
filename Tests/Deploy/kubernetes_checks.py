"""The checks of the rendered manifests, and their helpers. Each check is a plain function that returns the
problems it found (an empty list: the property holds), so the positive tests and the negative tests, which break
one thing first, run the very same functions."""

from __future__ import annotations

import base64
import re
import subprocess

import kubernetes_validate

from kubernetes_expectations import *  # noqa: F403


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


def first(objects: list[dict], kind: str, name: str) -> dict:
    item = named(objects, kind, name)
    assert item is not None
    return item


def container_of(objects, name):
    return first(objects, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]


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
        # Every Deployment, the gateway included, serves /metrics on its own port, apart from any public one.
        port = METRICS_PORT
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
