"""The DatastoreCluster resource: its CustomResourceDefinition and what the operator makes of one.

Everything here is pure (dicts in, dicts out), so the operator's decisions are unit-tested
without a cluster. Like upstream's ``TidbCluster``, the schema types the fields but does not
enumerate their values (a toleration's effect, the update strategy, ``runAsUser``): a wrong value
is accepted on the resource and refused where Kubernetes validates it, when the operator writes
the StatefulSet. That is what makes a broken resource the operator's problem to report.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from .topology import (
    CLUSTER_LABEL,
    CRD_NAME,
    DATASTORE_PORT,
    GROUP,
    KIND,
    MANAGED_BY,
    PLURAL,
    VERSION,
)

#: what a DatastoreCluster gets for a field it leaves out
DEFAULTS: dict[str, Any] = {
    "replicas": 3, "image": "redis:7.2", "storageClassName": "standard", "storageSize": "256Mi",
    "updateStrategy": "RollingUpdate", "tolerations": [], "affinity": {}, "securityContext": {"runAsUser": 999},
    "resources": {"requests": {"cpu": "20m", "memory": "24Mi"}, "limits": {"memory": "128Mi"}},
}
HASH_ANNOTATION = f"{GROUP}/spec-hash"

_TOLERATION = {"type": "object", "properties": {
    "key": {"type": "string"}, "operator": {"type": "string"}, "value": {"type": "string"},
    "effect": {"type": "string"}, "tolerationSeconds": {"type": "integer", "format": "int64"}}}
_SPEC_SCHEMA = {"type": "object", "properties": {
    "replicas": {"type": "integer", "format": "int32", "minimum": 0},
    "image": {"type": "string"},
    "storageClassName": {"type": "string"},
    "storageSize": {"type": "string"},
    "updateStrategy": {"type": "string", "description": "the StatefulSet update strategy type"},
    "tolerations": {"type": "array", "items": _TOLERATION},
    "affinity": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    "securityContext": {"type": "object", "properties": {
        "runAsUser": {"type": "integer", "format": "int64"}, "runAsGroup": {"type": "integer", "format": "int64"},
        "fsGroup": {"type": "integer", "format": "int64"}, "runAsNonRoot": {"type": "boolean"}}},
    "resources": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
}}
_CONDITION = {"type": "object", "properties": {
    "type": {"type": "string"}, "status": {"type": "string"}, "reason": {"type": "string"},
    "message": {"type": "string"}, "lastTransitionTime": {"type": "string"}}}
_STATUS_SCHEMA = {"type": "object", "properties": {
    "phase": {"type": "string"}, "replicas": {"type": "integer"}, "readyReplicas": {"type": "integer"},
    "observedGeneration": {"type": "integer", "format": "int64"},
    "conditions": {"type": "array", "items": _CONDITION}}}


def crd() -> dict[str, Any]:
    """The CustomResourceDefinition (status subresource, printer columns as kubectl shows them)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME, "labels": {"app.kubernetes.io/part-of": "fleetcast"}},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"plural": PLURAL, "singular": "datastorecluster", "kind": KIND, "shortNames": ["dsc"]},
            "versions": [{
                "name": VERSION, "served": True, "storage": True, "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"},
                    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": _SPEC_SCHEMA, "status": _STATUS_SCHEMA}}},
            }],
        },
    }


def spec_of(cr: dict[str, Any]) -> dict[str, Any]:
    """The resource's spec with the defaults filled in."""
    spec = copy.deepcopy(DEFAULTS)
    spec.update({k: v for k, v in (cr.get("spec") or {}).items() if v is not None})
    return spec


def labels(name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "fleetcast", CLUSTER_LABEL: name, **MANAGED_BY}


def selector(name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name}


def owner(cr: dict[str, Any]) -> list[dict[str, Any]]:
    meta = cr["metadata"]
    return [{"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "name": meta["name"], "uid": meta.get("uid", ""),
             "controller": True, "blockOwnerDeletion": True}]


def _meta(cr: dict[str, Any], name: str) -> dict[str, Any]:
    return {"name": name, "namespace": cr["metadata"]["namespace"], "labels": labels(cr["metadata"]["name"]),
            "ownerReferences": owner(cr)}


def headless_name(name: str) -> str:
    return f"{name}-headless"


def primary_address(cr: dict[str, Any]) -> str:
    name, ns = cr["metadata"]["name"], cr["metadata"]["namespace"]
    return f"{name}-0.{headless_name(name)}.{ns}.svc.cluster.local"


def start_script(cr: dict[str, Any]) -> str:
    """Pod 0 is the primary; every other pod replicates from it (the pod's ordinal decides)."""
    base = f"redis-server --port {DATASTORE_PORT} --dir /data --appendonly yes --save ''"
    return (f'ordinal="${{POD_NAME##*-}}"\n'
            f'if [ "$ordinal" = "0" ]; then exec {base}; fi\n'
            f"exec {base} --replicaof {primary_address(cr)} {DATASTORE_PORT}\n")


def statefulset(cr: dict[str, Any]) -> dict[str, Any]:
    name, spec = cr["metadata"]["name"], spec_of(cr)
    pod_security = dict(spec["securityContext"])
    if "runAsUser" in pod_security and "fsGroup" not in pod_security:
        pod_security["fsGroup"] = pod_security["runAsUser"] if isinstance(pod_security["runAsUser"], int) \
            and pod_security["runAsUser"] >= 0 else 999
    pod: dict[str, Any] = {
        "terminationGracePeriodSeconds": 5, "securityContext": pod_security,
        "containers": [{
            "name": "redis", "image": spec["image"], "command": ["sh", "-c", start_script(cr)],
            "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "ports": [{"name": "redis", "containerPort": DATASTORE_PORT}],
            "readinessProbe": {"tcpSocket": {"port": DATASTORE_PORT}, "periodSeconds": 2, "failureThreshold": 3},
            "resources": copy.deepcopy(spec["resources"]),
            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
    }
    if spec["tolerations"]:
        pod["tolerations"] = copy.deepcopy(spec["tolerations"])
    if spec["affinity"]:
        pod["affinity"] = copy.deepcopy(spec["affinity"])
    body: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": _meta(cr, name),
        "spec": {
            "serviceName": headless_name(name), "replicas": spec["replicas"], "podManagementPolicy": "OrderedReady",
            "selector": {"matchLabels": selector(name)},
            "updateStrategy": {"type": spec["updateStrategy"]},
            "template": {"metadata": {"labels": labels(name)}, "spec": pod},
            "volumeClaimTemplates": [{
                "metadata": {"name": "data", "labels": labels(name)},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": spec["storageClassName"],
                         "resources": {"requests": {"storage": spec["storageSize"]}}}}],
        },
    }
    body["metadata"]["annotations"] = {HASH_ANNOTATION: spec_hash(body["spec"])}
    return body


def spec_hash(spec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def services(cr: dict[str, Any]) -> list[dict[str, Any]]:
    """The headless Service (stable pod names for replication) and the client Service (the primary)."""
    name = cr["metadata"]["name"]
    port = [{"name": "redis", "port": DATASTORE_PORT, "targetPort": DATASTORE_PORT}]
    headless = {"apiVersion": "v1", "kind": "Service", "metadata": _meta(cr, headless_name(name)),
                "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": selector(name),
                         "ports": port}}
    client = {"apiVersion": "v1", "kind": "Service", "metadata": _meta(cr, name),
              "spec": {"selector": {**selector(name), "statefulset.kubernetes.io/pod-name": f"{name}-0"},
                       "ports": port}}
    return [headless, client]


def disruption_budget(cr: dict[str, Any]) -> dict[str, Any]:
    name = cr["metadata"]["name"]
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": _meta(cr, name),
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector(name)}}}


def claim_classes_differ(existing: dict[str, Any], desired: dict[str, Any]) -> bool:
    """True when the volume claim templates ask for another class or size (immutable on a StatefulSet)."""
    def key(sts: dict[str, Any]) -> list[tuple[Any, Any]]:
        return [((t.get("spec") or {}).get("storageClassName"),
                 (((t.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage"))
                for t in (sts.get("spec") or {}).get("volumeClaimTemplates") or []]
    return key(existing) != key(desired)


def spec_changed(existing: dict[str, Any], desired: dict[str, Any]) -> bool:
    """True when the resource's spec changed since the operator last wrote the StatefulSet."""
    return (existing.get("metadata", {}).get("annotations") or {}).get(HASH_ANNOTATION) != \
        desired["metadata"]["annotations"][HASH_ANNOTATION]


def hand_edited(existing: dict[str, Any], desired: dict[str, Any]) -> bool:
    """True when someone changed a container under the operator (an image, command or args).

    The replica count alone is not drift: it is applied when the resource's spec changes, and left
    alone otherwise, so whoever scales the StatefulSet for a while (a volume copy stopping its pods,
    as an autoscaler would) is not fought."""
    def shape(sts: dict[str, Any]) -> list[tuple[Any, ...]]:
        containers = (((sts.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
        return [(c.get("name"), c.get("image"), c.get("command"), c.get("args")) for c in containers]
    return shape(existing) != shape(desired)
