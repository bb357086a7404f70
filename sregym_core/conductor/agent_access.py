"""The agent's restricted identity: a ServiceAccount in the benchmark's hidden namespace, bound to
broad rights inside the app's namespace(s) only, read-only on nodes and on the ingress controller's
and kube-system's pods and logs (node components such as kube-proxy), and nothing else.

Works through the Kubernetes API alone (RBAC + TokenRequest), so it is the same on the embedded
cluster and on a real one. The agent cannot list namespaces, so hidden namespaces (the workload
generator's, the benchmark's own, observability) stay invisible.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import yaml

from .kube import ApiStatusError, Kube

BENCHMARK_NAMESPACE = "sregym-system"
AGENT_ACCOUNT = "sregym-agent"
IDENTITY_LABEL = "sregym.io/agent-identity"
EXPIRES_ANNOTATION = "sregym.io/expires-at"

#: What the agent may do inside the app's namespaces: everything an SRE on call does. Never a
#: ``*/status`` subresource (what nodes and controllers report: a forged Ready pod would pass the
#: oracles) nor ``escalate``/``bind``: a Role or RoleBinding the agent writes grants at most what the
#: agent itself holds (the API server's escalation check), so no identity it makes writes status either.
NAMESPACED_RULES = [
    {"apiGroups": [""], "resources": ["pods", "pods/log", "pods/exec", "pods/attach", "pods/eviction",
                                      "pods/ephemeralcontainers", "services", "endpoints",
                                      "configmaps", "secrets", "persistentvolumeclaims", "serviceaccounts",
                                      "resourcequotas", "limitranges", "replicationcontrollers"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]},
    # what happened is the cluster's to report: an Event the agent wrote (a forged OOMKilling warning) misled later
    # attempts (red-team round 13, finding 6)
    {"apiGroups": [""], "resources": ["events"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["apps"], "resources": ["deployments", "deployments/scale", "replicasets",
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
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
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
    # which admission webhooks see the app's objects (a FailedCreate event names one)
    {"apiGroups": ["admissionregistration.k8s.io"],
     "resources": ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"], "verbs": ["get", "list"]},
    # the CNI's pod address pools and BGP peering (Calico IPPools, BGPPeers, BGPConfigurations; absent on
    # clusters without Calico)
    {"apiGroups": ["crd.projectcalico.org"], "resources": ["ippools", "bgppeers", "bgpconfigurations"],
     "verbs": ["get", "list", "watch"]},
    # which ingress classes a controller serves (an Ingress whose class none serves gets no address)
    {"apiGroups": ["networking.k8s.io"], "resources": ["ingressclasses"], "verbs": ["get", "list", "watch"]},
]


#: Cluster components an SRE on call may look at but not change: the ingress controller's and the
#: node components' (kube-proxy) pods and logs (read-only, where the namespace exists).
READ_ONLY_NAMESPACES = ("ingress-nginx", "kube-system")
READ_ONLY_RULES = [
    {"apiGroups": [""], "resources": ["pods", "pods/log", "services", "endpoints", "events"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["apps"], "resources": ["deployments", "replicasets", "daemonsets"], "verbs": ["get", "list", "watch"]},
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


def ensure_benchmark_namespace(kube: Kube) -> None:
    """The hidden namespace the identities, the journal and the grants' records live in."""
    ensure_namespace(kube, BENCHMARK_NAMESPACE, {"sregym.io/hidden": "true"})


def grant_agent_access(kube: Kube, app_namespaces: list[str] | tuple[str, ...], out: Path, *,
                       account: str = AGENT_ACCOUNT, expiration_seconds: int = 86400) -> Path:
    """Create (or refresh) the agent identity ``account`` and write its kubeconfig to ``out``.

    The identity is a ServiceAccount in the hidden benchmark namespace, bound by a RoleBinding of
    the same name in each app namespace and a ClusterRoleBinding for cluster-wide reads. Its token
    comes from the TokenRequest API and expires after ``expiration_seconds`` (at least 600, as
    Kubernetes requires); :func:`revoke_agent_access` ends it before that.
    """
    ensure_benchmark_namespace(kube)
    expiration_seconds = max(600, int(expiration_seconds))
    metadata: dict = {"name": account}
    if account != AGENT_ACCOUNT:
        metadata["labels"] = {IDENTITY_LABEL: "attempt"}
        metadata["annotations"] = {EXPIRES_ANNOTATION: str(int(time.time()) + expiration_seconds)}
    _put(kube, f"/api/v1/namespaces/{BENCHMARK_NAMESPACE}/serviceaccounts",
         {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata})
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    _put(kube, f"{rbac}/clusterroles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                        "metadata": {"name": "sregym-agent"}, "rules": NAMESPACED_RULES})
    _put(kube, f"{rbac}/clusterroles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                        "metadata": {"name": "sregym-agent-cluster"}, "rules": CLUSTER_RULES})
    subject = [{"kind": "ServiceAccount", "name": account, "namespace": BENCHMARK_NAMESPACE}]
    _put(kube, f"{rbac}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": _cluster_binding(account)}, "subjects": subject,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "sregym-agent-cluster"}})
    for ns in app_namespaces:
        _put(kube, f"{rbac}/namespaces/{ns}/rolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": account, "labels": {"sregym.io/managed": "true"}}, "subjects": subject,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "sregym-agent"}})
    _put(kube, f"{rbac}/clusterroles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                        "metadata": {"name": "sregym-agent-read"}, "rules": READ_ONLY_RULES})
    for ns in READ_ONLY_NAMESPACES:
        try:
            _put(kube, f"{rbac}/namespaces/{ns}/rolebindings", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": account, "labels": {"sregym.io/managed": "true"}}, "subjects": subject,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "sregym-agent-read"}})
        except ApiStatusError as exc:
            if exc.code != 404:  # no such namespace on this cluster
                raise
    token = kube.request("POST", f"/api/v1/namespaces/{BENCHMARK_NAMESPACE}/serviceaccounts/{account}/token",
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


def revoke_agent_access(kube: Kube, app_namespaces: list[str] | tuple[str, ...], account: str) -> None:
    """End the identity ``account``: its bindings go, and deleting its ServiceAccount invalidates
    every token issued for it (bound tokens name the account's uid)."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    paths = [f"{rbac}/namespaces/{ns}/rolebindings/{account}" for ns in (*app_namespaces, *READ_ONLY_NAMESPACES)]
    paths += [f"{rbac}/clusterrolebindings/{_cluster_binding(account)}",
              f"/api/v1/namespaces/{BENCHMARK_NAMESPACE}/serviceaccounts/{account}"]
    for path in paths:
        kube.delete(path)


def revoke_stale_identities(kube: Kube, app_namespaces: list[str] | tuple[str, ...]) -> list[str]:
    """Remove attempt identities left behind by a conductor killed mid-attempt, once their tokens
    have expired (a live attempt of another conductor on the same cluster keeps its own)."""
    try:
        accounts = kube.list_items(f"/api/v1/namespaces/{BENCHMARK_NAMESPACE}/serviceaccounts", "ServiceAccount",
                                   labelSelector=f"{IDENTITY_LABEL}=attempt")
    except ApiStatusError as exc:
        if exc.code == 404:
            return []
        raise
    now = time.time()
    names = [a["metadata"]["name"] for a in accounts
             if float((a["metadata"].get("annotations") or {}).get(EXPIRES_ANNOTATION, 0)) < now]
    from .grants import revoke_grants

    for name in names:
        revoke_agent_access(kube, app_namespaces, name)
        revoke_grants(kube, name)  # a problem's extra rights (agent_access), if it had any
    return names


#: an identity is an account a process can hold a token of, and the bindings that give it rights
_IDENTITY_KINDS = {"ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
                   "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings"}


def identities(kube: Kube, namespaces: list[str] | tuple[str, ...]) -> dict[tuple[str, str, str], list[dict]]:
    """The app namespaces' ServiceAccounts and RoleBindings: (kind, namespace, name) -> the binding's subjects
    (an account's: empty)."""
    found: dict[tuple[str, str, str], list[dict]] = {}
    for ns in namespaces:
        for kind, path in _IDENTITY_KINDS.items():
            for item in kube.list_items(path.format(ns=ns), kind):
                found[(kind, ns, item["metadata"]["name"])] = list(item.get("subjects") or [])
    return found


def end_identities_made(kube: Kube, namespaces: list[str] | tuple[str, ...],
                        kept: dict[tuple[str, str, str], list[dict]]) -> list[str]:
    """End every identity the agent made in the app namespaces, as its own is ended (red-team round 21, finding 2,
    and its sibling: a ServiceAccount the agent created and bound within its own rights, whose token a pod of its
    keeps, outlived the agent's revocation). ``kept``: the accounts and bindings that existed after deploy or once
    the faults were in, with their subjects. An account not among them is deleted (every token bound to it dies
    with it); a binding not among them is deleted; a kept binding loses the subjects the agent added. What a fix puts
    back under an existing name (a deleted account or binding, a binding's lost subject) is untouched. Returns what
    was ended, for the record."""
    ended: list[str] = []
    for (kind, ns, name), subjects in identities(kube, namespaces).items():
        path = _IDENTITY_KINDS[kind].format(ns=ns) + f"/{name}"
        if (kind, ns, name) not in kept:
            if kind == "ServiceAccount" and name == "default":
                continue  # the namespace's own: the cluster makes it again at once
            kube.delete(path)
            ended.append(f"{kind} {ns}/{name}")
            continue
        added = [s for s in subjects if s not in kept[(kind, ns, name)]]
        if added:
            body = {"subjects": [s for s in subjects if s not in added]}
            kube.request("PATCH", path, body=body, content_type="application/merge-patch+json")
            ended.append(f"{kind} {ns}/{name}: {len(added)} subject(s) the agent added")
    return ended


def _cluster_binding(account: str) -> str:
    return "sregym-agent-cluster" if account == AGENT_ACCOUNT else f"{account}-cluster"


def describe_access(app_namespaces: list[str]) -> str:
    return json.dumps({"namespaces": app_namespaces, "cluster_read": [r["resources"] for r in CLUSTER_RULES]})
