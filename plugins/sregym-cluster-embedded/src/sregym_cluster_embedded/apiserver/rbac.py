"""RBAC evaluated for real over the stored Role/ClusterRole/RoleBinding/ClusterRoleBinding objects."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from .selectors import labels_of, selector_from_match_labels
from .shapes import as_dict

if TYPE_CHECKING:
    from .core import ApiCore

MASTERS = "system:masters"
AGENT_GROUP = "sregym:agents"
AGENT_USER = "sregym-agent"
ADMIN_USER = "kubernetes-admin"


@attrs.frozen(kw_only=True)
class UserInfo:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: dict[str, list[str]] = attrs.field(factory=dict, hash=False)

    @property
    def is_master(self) -> bool:
        return MASTERS in self.groups

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"username": self.name, "groups": list(self.groups)}
        if self.uid:
            out["uid"] = self.uid
        if self.extra:
            out["extra"] = self.extra
        return out


@attrs.frozen(kw_only=True)
class Attributes:
    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""  # set for non-resource requests

    @property
    def is_resource(self) -> bool:
        return not self.path


def _subject_matches(subject: Any, user: UserInfo, binding_ns: str) -> bool:
    if not isinstance(subject, dict):
        return False
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return name == user.name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_ns
        return user.name == f"system:serviceaccount:{ns}:{name}"
    return False


def _match(values: Any, value: str) -> bool:
    return isinstance(values, list) and bool(values) and ("*" in values or value in values)


def _resource_match(rule_resources: list[str] | None, resource: str, subresource: str) -> bool:
    if not isinstance(rule_resources, list) or not rule_resources:
        return False
    combined = f"{resource}/{subresource}" if subresource else resource
    for r in rule_resources:
        if r == "*" or r == combined:
            return True
        if subresource and (r == f"{resource}/*" or r == f"*/{subresource}"):
            return True
    return False


def _path_match(urls: list[str] | None, path: str) -> bool:
    for url in urls if isinstance(urls, list) else []:
        if not isinstance(url, str):
            continue
        if url == "*" or url == path:
            return True
        if url.endswith("*") and path.startswith(url[:-1]):
            return True
    return False


def rule_allows(rule: Any, attrs_: Attributes) -> bool:
    if not isinstance(rule, dict) or not _match(rule.get("verbs"), attrs_.verb):
        return False
    if not attrs_.is_resource:
        return _path_match(rule.get("nonResourceURLs"), attrs_.path)
    if not _match(rule.get("apiGroups"), attrs_.group):
        return False
    if not _resource_match(rule.get("resources"), attrs_.resource, attrs_.subresource):
        return False
    names = rule.get("resourceNames")
    if names:
        return bool(attrs_.name) and isinstance(names, list) and attrs_.name in names
    return True


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _rules_of(role: dict[str, Any]) -> list[dict[str, Any]]:
    """A role's well-formed rules (a malformed one must never break authorization for everyone)."""
    return [r for r in _list(role.get("rules")) if isinstance(r, dict)]


class Authorizer:
    def __init__(self, core: ApiCore) -> None:
        self.core = core

    # -- rule collection ------------------------------------------------------------------------
    def _cluster_role_rules(self, name: str) -> list[dict[str, Any]]:
        role = self.core.store.get("clusterroles.rbac.authorization.k8s.io", None, name)
        if role is None:
            return []
        rules = _rules_of(role)
        agg = as_dict(role.get("aggregationRule"))
        selectors = agg.get("clusterRoleSelectors")
        for sel in selectors if isinstance(selectors, list) else []:
            if not isinstance(sel, dict):
                continue
            matcher = selector_from_match_labels(sel)
            if matcher is None:
                continue
            for other in self.core.store.list("clusterroles.rbac.authorization.k8s.io"):
                if other is not role and matcher(labels_of(other)):
                    rules.extend(_rules_of(other))
        return rules

    def _role_rules(self, ref: Any, namespace: str) -> list[dict[str, Any]]:
        if not isinstance(ref, dict) or not isinstance(ref.get("name"), str):
            return []
        if ref.get("kind") == "ClusterRole":
            return self._cluster_role_rules(ref["name"])
        role = self.core.store.get("roles.rbac.authorization.k8s.io", namespace, ref["name"])
        return _rules_of(role) if role else []

    def role_ref_rules(self, ref: Any, namespace: str) -> list[dict[str, Any]]:
        """The rules of the role a binding in ``namespace`` references (empty when it does not exist)."""
        return self._role_rules(ref, namespace)

    def cluster_rules(self, user: UserInfo) -> list[dict[str, Any]]:
        rules: list[dict[str, Any]] = []
        for binding in self.core.store.list("clusterrolebindings.rbac.authorization.k8s.io"):
            if any(_subject_matches(s, user, "") for s in _list(binding.get("subjects"))):
                ref = binding.get("roleRef")
                if isinstance(ref, dict) and isinstance(ref.get("name"), str):
                    rules.extend(self._cluster_role_rules(ref["name"]))
        return rules

    def namespace_rules(self, user: UserInfo, namespace: str) -> list[dict[str, Any]]:
        rules: list[dict[str, Any]] = []
        if not namespace:
            return rules
        for binding in self.core.store.list("rolebindings.rbac.authorization.k8s.io", namespace):
            if any(_subject_matches(s, user, namespace) for s in _list(binding.get("subjects"))):
                rules.extend(self._role_rules(binding.get("roleRef"), namespace))
        return rules

    # -- decisions ------------------------------------------------------------------------------
    def allowed(self, user: UserInfo, attrs_: Attributes) -> bool:
        if user.is_master:
            return True
        if any(rule_allows(r, attrs_) for r in self.cluster_rules(user)):
            return True
        if attrs_.is_resource and attrs_.namespace:
            return any(rule_allows(r, attrs_) for r in self.namespace_rules(user, attrs_.namespace))
        return False

    def rules_review(self, user: UserInfo, namespace: str) -> dict[str, Any]:
        """The status of a SelfSubjectRulesReview."""
        if user.is_master:
            rules = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}, {"verbs": ["*"],
                                                                              "nonResourceURLs": ["*"]}]
        else:
            rules = self.cluster_rules(user) + self.namespace_rules(user, namespace)
        resource_rules, non_resource_rules = [], []
        for r in rules:
            if not isinstance(r, dict):
                continue
            if r.get("nonResourceURLs"):
                non_resource_rules.append({"verbs": list(_list(r.get("verbs"))),
                                           "nonResourceURLs": list(_list(r["nonResourceURLs"]))})
            else:
                entry = {"verbs": list(_list(r.get("verbs"))), "apiGroups": list(_list(r.get("apiGroups"))),
                         "resources": list(_list(r.get("resources")))}
                if r.get("resourceNames"):
                    entry["resourceNames"] = list(_list(r["resourceNames"]))
                resource_rules.append(entry)
        return {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": False}


# -- bootstrap roles --------------------------------------------------------------------------------
_READ = ["get", "list", "watch"]
_WRITE = ["create", "delete", "deletecollection", "patch", "update"]


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> dict[str, Any]:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def _view_rules() -> list[dict[str, Any]]:
    return [
        _rule([""], ["configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "pods",
                     "pods/log", "pods/status", "replicationcontrollers", "replicationcontrollers/scale",
                     "replicationcontrollers/status", "serviceaccounts", "services", "services/status",
                     "events", "limitranges", "resourcequotas", "resourcequotas/status", "bindings",
                     "namespaces", "namespaces/status"], _READ),
        _rule(["apps"], ["controllerrevisions", "daemonsets", "daemonsets/status", "deployments",
                         "deployments/scale", "deployments/status", "replicasets", "replicasets/scale",
                         "replicasets/status", "statefulsets", "statefulsets/scale", "statefulsets/status"], _READ),
        _rule(["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"], _READ),
        _rule(["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"], _READ),
        _rule(["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"], _READ),
        _rule(["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"], _READ),
        _rule(["discovery.k8s.io"], ["endpointslices"], _READ),
        _rule(["events.k8s.io"], ["events"], _READ),
        _rule(["coordination.k8s.io"], ["leases"], _READ),
        _rule(["metrics.k8s.io"], ["pods"], _READ),
    ]


def _edit_rules() -> list[dict[str, Any]]:
    return _view_rules() + [
        _rule([""], ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"],
              _READ),
        _rule([""], ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "pods/eviction",
                     "pods/ephemeralcontainers", "serviceaccounts/token"], ["create"]),
        _rule([""], ["configmaps", "events", "persistentvolumeclaims", "pods", "replicationcontrollers",
                     "replicationcontrollers/scale", "secrets", "serviceaccounts", "services", "services/proxy",
                     "endpoints", "pods/ephemeralcontainers"], _WRITE),
        _rule(["apps"], ["daemonsets", "deployments", "deployments/rollback", "deployments/scale", "replicasets",
                         "replicasets/scale", "statefulsets", "statefulsets/scale"], _WRITE),
        _rule(["autoscaling"], ["horizontalpodautoscalers"], _WRITE),
        _rule(["batch"], ["cronjobs", "jobs"], _WRITE),
        _rule(["policy"], ["poddisruptionbudgets"], _WRITE),
        _rule(["networking.k8s.io"], ["ingresses", "networkpolicies"], _WRITE),
        _rule(["discovery.k8s.io"], ["endpointslices"], _WRITE),
        _rule(["coordination.k8s.io"], ["leases"], _WRITE),
    ]


def _admin_rules() -> list[dict[str, Any]]:
    return _edit_rules() + [
        _rule(["authorization.k8s.io"], ["localsubjectaccessreviews"], ["create"]),
        _rule(["rbac.authorization.k8s.io"], ["rolebindings", "roles"], _READ + _WRITE),
    ]


def bootstrap_objects() -> list[tuple[str, dict[str, Any]]]:
    """(resource key, object) pairs for the default roles and bindings."""
    labels = {"kubernetes.io/bootstrapping": "rbac-defaults"}
    api = "rbac.authorization.k8s.io/v1"

    def role(name: str, rules: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
        return "clusterroles.rbac.authorization.k8s.io", {
            "apiVersion": api, "kind": "ClusterRole", "metadata": {"name": name, "labels": dict(labels)},
            "rules": rules}

    def binding(name: str, role_name: str, subjects: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
        return "clusterrolebindings.rbac.authorization.k8s.io", {
            "apiVersion": api, "kind": "ClusterRoleBinding", "metadata": {"name": name, "labels": dict(labels)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name},
            "subjects": subjects}

    def group(name: str) -> dict[str, Any]:
        return {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": name}

    discovery_urls = ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*",
                      "/readyz", "/version", "/version/"]
    return [
        role("cluster-admin", [_rule(["*"], ["*"], ["*"]), {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
        role("admin", _admin_rules()),
        role("edit", _edit_rules()),
        role("view", _view_rules()),
        role("system:discovery", [{"nonResourceURLs": discovery_urls, "verbs": ["get"]}]),
        role("system:public-info-viewer", [{"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version",
                                                                 "/version/"], "verbs": ["get"]}]),
        role("system:basic-user", [
            _rule(["authentication.k8s.io"], ["selfsubjectreviews"], ["create"]),
            _rule(["authorization.k8s.io"], ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], ["create"]),
        ]),
        # what an SRE agent may do inside the namespaces it is given (bound per namespace by the runner)
        role("sregym:agent", _admin_rules()),
        # cluster-scoped objects every agent may read
        role("sregym:agent-cluster-read", [
            _rule([""], ["nodes", "nodes/status", "persistentvolumes"], _READ),
            _rule(["storage.k8s.io"], ["storageclasses"], _READ),
            _rule(["scheduling.k8s.io"], ["priorityclasses"], _READ),
            _rule(["networking.k8s.io"], ["ingressclasses"], _READ),
            _rule(["metrics.k8s.io"], ["nodes"], _READ),
        ]),
        binding("cluster-admin", "cluster-admin", [group(MASTERS)]),
        binding("system:discovery", "system:discovery", [group("system:authenticated")]),
        binding("system:basic-user", "system:basic-user", [group("system:authenticated")]),
        binding("system:public-info-viewer", "system:public-info-viewer",
                [group("system:authenticated"), group("system:unauthenticated")]),
        binding("sregym:agent-cluster-read", "sregym:agent-cluster-read", [group(AGENT_GROUP)]),
    ]


def bootstrap_rbac(core: ApiCore) -> None:
    for key, obj in bootstrap_objects():
        if core.store.get(key, None, obj["metadata"]["name"]) is None:
            core.create(core.registry.by_key(key), None, obj)
