"""The agent's restricted identity: a ServiceAccount in the benchmark's hidden namespace, bound to
broad rights inside the app's namespace(s) only, read-only on nodes, and nothing else.

Works through the Kubernetes API alone (RBAC + TokenRequest), so it is the same on the embedded
cluster and on a real one. The agent cannot list namespaces, so hidden namespaces (the workload
generator's, the benchmark's own, observability) stay invisible.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from .kube import ApiStatusError, Kube

BENCHMARK_NAMESPACE = "sregym-system"
AGENT_ACCOUNT = "sregym-agent"

#: What the agent may do inside the app's namespaces: everything an SRE on call does.
NAMESPACED_RULES = [
    {"apiGroups": [""], "resources": ["pods", "pods/log", "pods/exec", "pods/attach", "pods/eviction",
                                      "pods/ephemeralcontainers", "pods/status", "services", "endpoints",
                                      "configmaps", "secrets", "persistentvolumeclaims", "serviceaccounts",
                                      "events", "resourcequotas", "limitranges", "replicationcontrollers"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]},
    {"apiGroups": ["apps"], "resources": ["deployments", "deployments/scale", "deployments/status", "replicasets",
                                          "replicasets/scale", "statefulsets", "statefulsets/scale", "daemonsets",
                                          "controllerrevisions"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]},
    {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies", "ingresses"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete", "bind", "escalate"]},
    {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["metrics.k8s.io"], "resources": ["pods"], "verbs": ["get", "list"]},
]

#: Cluster-scoped reads an SRE needs (describe node, top nodes, storage classes).
CLUSTER_RULES = [
    {"apiGroups": [""], "resources": ["nodes", "persistentvolumes"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["metrics.k8s.io"], "resources": ["nodes"], "verbs": ["get", "list"]},
    {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get", "list"]},
]


def _put(kube: Kube, collection: str, obj: dict) -> None:
    """Create ``obj`` under ``collection``, or replace it when it exists."""
    name = obj["metadata"]["name"]
    try:
        kube.request("POST", collection, body=obj)
    except ApiStatusError as exc:
        if exc.code != 409:
            raise
        current = kube.get(f"{collection}/{name}")
        obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}
        kube.request("PUT", f"{collection}/{name}", body=obj)


def ensure_namespace(kube: Kube, name: str, labels: dict[str, str] | None = None) -> None:
    try:
        kube.request("POST", "/api/v1/namespaces", body={
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}})
    except ApiStatusError as exc:
        if exc.code != 409:
            raise


def grant_agent_access(kube: Kube, app_namespaces: list[str] | tuple[str, ...], out: Path,
                       *, expiration_seconds: int = 86400) -> Path:
    """Create (or refresh) the agent identity and write its kubeconfig to ``out``."""
    ensure_namespace(kube, BENCHMARK_NAMESPACE, {"sregym.io/hidden": "true"})
    _put(kube, f"/api/v1/namespaces/{BENCHMARK_NAMESPACE}/serviceaccounts",
         {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": AGENT_ACCOUNT}})
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    _put(kube, f"{rbac}/clusterroles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                        "metadata": {"name": "sregym-agent"}, "rules": NAMESPACED_RULES})
    _put(kube, f"{rbac}/clusterroles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                        "metadata": {"name": "sregym-agent-cluster"}, "rules": CLUSTER_RULES})
    subject = [{"kind": "ServiceAccount", "name": AGENT_ACCOUNT, "namespace": BENCHMARK_NAMESPACE}]
    _put(kube, f"{rbac}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "sregym-agent-cluster"}, "subjects": subject,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "sregym-agent-cluster"}})
    for ns in app_namespaces:
        _put(kube, f"{rbac}/namespaces/{ns}/rolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "sregym-agent", "labels": {"sregym.io/managed": "true"}}, "subjects": subject,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "sregym-agent"}})
    token = kube.request("POST", f"/api/v1/namespaces/{BENCHMARK_NAMESPACE}/serviceaccounts/{AGENT_ACCOUNT}/token",
                         body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                               "spec": {"expirationSeconds": expiration_seconds}})["status"]["token"]
    server, ca, insecure = kube.server_and_ca()
    cluster: dict = {"server": server}
    if ca:
        cluster["certificate-authority-data"] = ca
    elif insecure:
        cluster["insecure-skip-tls-verify"] = True
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "sregym-agent",
        "clusters": [{"name": "sregym", "cluster": cluster}],
        "users": [{"name": "sregym-agent", "user": {"token": token}}],
        "contexts": [{"name": "sregym-agent", "context": {"cluster": "sregym", "user": "sregym-agent",
                                                           "namespace": app_namespaces[0]}}],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(config))
    out.chmod(0o600)
    return out


def describe_access(app_namespaces: list[str]) -> str:
    return json.dumps({"namespaces": app_namespaces, "cluster_read": [r["resources"] for r in CLUSTER_RULES]})
