"""The ha overlay (deploy/kubernetes/overlays/ha) swaps the database for a CloudNativePG Cluster: its custom
resources have no schema here, so check_cnpg_fields checks their fields against the lists below and
check_cnpg_cluster the properties (three instances, one synchronous standby, WAL archiving and scheduled backups
through the Barman Cloud plugin, the services' DATABASE_URL from the Cluster's own Secret)."""

from __future__ import annotations

import copy

import pytest

from kubernetes_checks import *  # noqa: F403
from kubernetes_expectations import *  # noqa: F403


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
