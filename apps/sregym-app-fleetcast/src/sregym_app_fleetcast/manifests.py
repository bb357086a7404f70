"""The Kubernetes manifests: built here, shipped as plain YAML under ``manifests/``.

``python -m sregym_app_fleetcast.manifests --write`` regenerates the files (a test checks they
match :func:`build`). The CustomResourceDefinition goes first and on its own
(``05-crd.yaml``): a DatastoreCluster can be applied only once its type is served.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from sregym_appkit import manifests as kit
from sregym_appkit.objects import SURGE_FIRST, AppObjects

from . import IMAGE_REPO, IMAGE_TAG, OPERATOR_IMAGE_REPO
from .crd import crd
from .topology import (
    ADMIN_PORT,
    API,
    API_PORT,
    DATASTORE,
    DATASTORE_PORT,
    GROUP,
    KIND,
    LOAD_GENERATOR,
    LOAD_GENERATOR_PORT,
    NAMESPACE,
    OPERATOR,
    OPERATOR_HEALTH_PORT,
    PLURAL,
    VERSION,
    WORKLOAD_NAMESPACE,
)

DEFAULT_PARAMS = kit.default_params(IMAGE_TAG, workload_rate=4)
OPERATOR_IMAGE = f"{OPERATOR_IMAGE_REPO}:{IMAGE_TAG}"
OBJECTS = AppObjects(part_of="fleetcast", admin_port=ADMIN_PORT)
_labels, _meta, _service = OBJECTS.labels, OBJECTS.meta, OBJECTS.service


def _deployment(name: str, namespace: str, container: dict[str, Any], tier: str, **options: Any) -> dict[str, Any]:
    """FleetCast's pods stop within 5 s, and its API rolls a new pod in before the old one goes."""
    return OBJECTS.deployment(name, namespace, container, tier, grace_s=5, **{"strategy": SURGE_FIRST, **options})
#: the shipped DatastoreCluster's spec (faults compare against it, the reference fixes restore it)
DATASTORE_SPEC: dict[str, Any] = {
    "replicas": 3, "image": "redis:7.2", "storageClassName": "standard", "storageSize": "256Mi",
    "updateStrategy": "RollingUpdate",
    "tolerations": [{"key": f"{GROUP}/datastore", "operator": "Exists", "effect": "NoSchedule"}],
    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                           "labelSelector": {"matchLabels": {"app.kubernetes.io/name": DATASTORE}}}}]}},
    "securityContext": {"runAsUser": 999, "fsGroup": 999},
    # a datastore replica asks for half a core: the cluster holds a few dozen, not a hundred thousand; three
    # fit beside another app on a one-node cluster of four cores (the landing suite's session cluster)
    "resources": {"requests": {"cpu": "500m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
}


def _rbac(kind: str, name: str, namespace: str | None, rules: list[dict[str, Any]]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": _labels(OPERATOR, "operator")}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta, "rules": rules}


def _binding(kind: str, name: str, namespace: str | None, role_kind: str, subjects: list[dict[str, Any]]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": _labels(OPERATOR, "operator")}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
            "subjects": subjects}


OPERATOR_RULES = [
    {"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get", "list", "watch", "patch", "update"]},
    {"apiGroups": [GROUP], "resources": [f"{PLURAL}/status"], "verbs": ["get", "patch", "update"]},
    {"apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "list", "watch", "create", "update", "patch"]},
    {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["get", "list", "watch", "delete"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["get", "list", "watch", "create", "update", "patch"]},
    {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
]


def operator_objects() -> list[dict[str, Any]]:
    """The operator's ServiceAccount, RBAC (namespaced, plus reading StorageClasses) and Deployment."""
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(OPERATOR, NAMESPACE, "operator")}
    subject = [{"kind": "ServiceAccount", "name": OPERATOR, "namespace": NAMESPACE}]
    container = {
        "name": "operator", "image": OPERATOR_IMAGE,
        "env": [{"name": "WATCH_NAMESPACES", "value": NAMESPACE}, {"name": "HEALTH_PORT", "value": str(OPERATOR_HEALTH_PORT)}],
        "ports": [{"name": "health", "containerPort": OPERATOR_HEALTH_PORT}],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": OPERATOR_HEALTH_PORT}, "initialDelaySeconds": 20,
                          "periodSeconds": 10, "failureThreshold": 3},
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": OPERATOR_HEALTH_PORT}, "periodSeconds": 3},
        "resources": {"requests": {"cpu": "20m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
    }
    return [
        account,
        _rbac("Role", OPERATOR, NAMESPACE, OPERATOR_RULES),
        _binding("RoleBinding", OPERATOR, NAMESPACE, "Role", subject),
        _rbac("ClusterRole", f"fleetcast-{OPERATOR}", None,
              # kopf discovers its resource through the CRDs and matches namespaces: both cluster-wide reads
              [{"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"], "verbs": ["get", "list", "watch"]},
               {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
                "verbs": ["get", "list", "watch"]},
               {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]}]),
        _binding("ClusterRoleBinding", f"fleetcast-{OPERATOR}", None, "ClusterRole", subject),
        # Recreate: kopf runs standalone (no peering), so two operator pods must never overlap
        _deployment(OPERATOR, NAMESPACE, container, "operator", account=OPERATOR, scrape=False,
                    strategy={"type": "Recreate"}),
    ]


def sre_access() -> list[dict[str, Any]]:
    """Whoever is on call may edit DatastoreClusters here (never their status, which the operator
    reports): a Role bound to the benchmark's service accounts, the agent's among them."""
    rules = [{"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get", "list", "watch", "update", "patch"]}]
    name = "datastorecluster-editor"
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": _labels(name, "access")}, "rules": rules}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": name, "namespace": NAMESPACE, "labels": _labels(name, "access")},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
               "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
                             "name": "system:serviceaccounts:sregym-system"}]}
    return [role, binding]


def datastore() -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "metadata": _meta(DATASTORE, NAMESPACE, "datastore"),
            "spec": copy.deepcopy(DATASTORE_SPEC)}


def build() -> list[dict[str, Any]]:
    """Every object with the default parameters, in apply order."""
    docs: list[dict[str, Any]] = [
        *OBJECTS.namespaces(NAMESPACE, WORKLOAD_NAMESPACE),
        crd(),
        *operator_objects(),
        *sre_access(),
        datastore(),
    ]
    api = {"name": API, "image": f"{IMAGE_REPO}:{IMAGE_TAG}", "args": ["api"],
           "env": [{"name": "PORT", "value": str(API_PORT)}, {"name": "ADMIN_PORT", "value": str(ADMIN_PORT)},
                   {"name": "DATASTORE_ADDR", "value": f"{DATASTORE}:{DATASTORE_PORT}"}],
           "ports": [{"name": "http", "containerPort": API_PORT}, {"name": "admin", "containerPort": ADMIN_PORT}],
           "readinessProbe": {"httpGet": {"path": "/readyz", "port": ADMIN_PORT}, "periodSeconds": 2, "failureThreshold": 2},
           "livenessProbe": {"httpGet": {"path": "/healthz", "port": ADMIN_PORT}, "initialDelaySeconds": 15,
                             "periodSeconds": 10, "failureThreshold": 3},
           "resources": {"requests": {"cpu": "20m", "memory": "48Mi"}, "limits": {"memory": "256Mi"}}}
    docs += [_service(API, NAMESPACE, [("http", API_PORT), ("admin", ADMIN_PORT)], "frontend"),
             _deployment(API, NAMESPACE, api, "frontend"),
             kit.ingress(NAMESPACE, API, "http", _labels(API, "frontend"))]
    docs += OBJECTS.load_generator(
        WORKLOAD_NAMESPACE, f"{IMAGE_REPO}:{IMAGE_TAG}", f"http://{API}.{NAMESPACE}.svc.cluster.local:{API_PORT}",
        rate=DEFAULT_PARAMS["workload_rate"], timeout_s=5, cpu="20m", memory="48Mi", name=LOAD_GENERATOR,
        port=LOAD_GENERATOR_PORT, scrape=False, grace_s=5, strategy=SURGE_FIRST)
    return docs


def _files(doc: dict[str, Any]) -> str | None:
    """FleetCast's own files, in apply order: the CRD alone (a DatastoreCluster can be applied only
    once its type is served), the operator, the SREs' access, the DatastoreCluster."""
    kind = doc["kind"]
    if kind == "CustomResourceDefinition":
        return "05-crd.yaml"
    if doc["metadata"]["name"] in (OPERATOR, f"fleetcast-{OPERATOR}"):
        return "10-operator.yaml"
    if kind in ("Role", "RoleBinding"):
        return "15-access.yaml"
    return "20-datastore.yaml" if kind == KIND else None


SHIPPED = kit.ShippedManifests(__package__, IMAGE_REPO, DEFAULT_PARAMS, build=build,
                               workload_namespace=WORKLOAD_NAMESPACE, files_of_app=_files, default_file="30-api.yaml")


def render(params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The shipped manifests with ``params`` applied (the operator image follows ``image_tag`` too)."""
    merged = kit.merge_params(params, DEFAULT_PARAMS)
    docs = SHIPPED.render(merged)
    for doc in docs:
        for c in kit.containers(doc):
            if c.get("image", "").startswith(OPERATOR_IMAGE_REPO + ":"):
                c["image"] = f"{OPERATOR_IMAGE_REPO}:{merged['image_tag']}"
    return docs


def split(docs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the CustomResourceDefinitions, everything else): the first must be served before the rest applies."""
    crds = [d for d in docs if d["kind"] == "CustomResourceDefinition"]
    return crds, [d for d in docs if d["kind"] != "CustomResourceDefinition"]


def render_yaml(params: Mapping[str, Any] | None = None) -> str:
    return kit.dump(render(params))


if __name__ == "__main__":
    SHIPPED.command_line(render_yaml)
