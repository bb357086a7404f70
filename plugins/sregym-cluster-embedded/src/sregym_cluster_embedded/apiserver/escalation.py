"""RBAC escalation prevention, as the real API server's RBAC storage applies it.

Holding ``create`` on Roles or RoleBindings is not enough to hand out rights: a user may write a
Role (or ClusterRole) only when it already holds every permission the role grants, and a binding
only when it holds every permission of the role it references, unless it holds the ``escalate``
verb on that role (for roles) or ``bind`` on the referenced role (for bindings). Without this an
identity allowed to edit RBAC in one namespace makes itself (or a ServiceAccount it runs a pod as)
anything in that namespace: ``pods/status`` included, which only nodes and controllers write.

A ClusterRole with an ``aggregationRule`` needs ``escalate`` (it gathers rules from other roles).
Members of ``system:masters`` are never checked.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import ApiError
from .rbac import Attributes, Authorizer, UserInfo
from .shapes import as_dict, as_list

RBAC_GROUP = "rbac.authorization.k8s.io"
ROLE_KINDS = {"Role": "roles", "ClusterRole": "clusterroles"}
BINDING_KINDS = {"RoleBinding": "rolebindings", "ClusterRoleBinding": "clusterrolebindings"}


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _covers_resource(owned: list[str], resource: str) -> bool:
    if "*" in owned or resource in owned:
        return True
    if "/" in resource:
        base, sub = resource.split("/", 1)
        return f"{base}/*" in owned or f"*/{sub}" in owned
    return False


def _atoms(rule: dict[str, Any]) -> Iterable[tuple[str, ...]]:
    """A rule broken into single grants: ('res', group, resource, verb, name) or ('url', path, verb)."""
    verbs = _strings(rule.get("verbs"))
    urls = _strings(rule.get("nonResourceURLs"))
    if urls:
        for url in urls:
            for verb in verbs:
                yield ("url", url, verb)
        return
    names = _strings(rule.get("resourceNames")) or [""]
    for group in _strings(rule.get("apiGroups")):
        for resource in _strings(rule.get("resources")):
            for verb in verbs:
                for name in names:
                    yield ("res", group, resource, verb, name)


def _owned(rule: dict[str, Any], atom: tuple[str, ...]) -> bool:
    verbs = _strings(rule.get("verbs"))
    if atom[0] == "url":
        _kind, url, verb = atom
        if not ("*" in verbs or verb in verbs):
            return False
        owned_urls = _strings(rule.get("nonResourceURLs"))
        return any(u == "*" or u == url or (u.endswith("*") and url.startswith(u[:-1])) for u in owned_urls)
    _kind, group, resource, verb, name = atom
    if rule.get("nonResourceURLs") or not ("*" in verbs or verb in verbs):
        return False
    groups = _strings(rule.get("apiGroups"))
    if not ("*" in groups or group in groups):
        return False
    if not _covers_resource(_strings(rule.get("resources")), resource):
        return False
    owned_names = _strings(rule.get("resourceNames"))
    return not owned_names or (bool(name) and name in owned_names)


def not_held(owner_rules: list[dict[str, Any]], requested: list[dict[str, Any]]) -> list[str]:
    """The requested grants (printed as the real server prints them) no owner rule covers."""
    missing: list[str] = []
    for rule in requested:
        if not isinstance(rule, dict):
            continue
        for atom in _atoms(rule):
            if any(_owned(r, atom) for r in owner_rules):
                continue
            if atom[0] == "url":
                text = f'{{NonResourceURLs:["{atom[1]}"], Verbs:["{atom[2]}"]}}'
            else:
                names = f', ResourceNames:["{atom[4]}"]' if atom[4] else ""
                text = f'{{APIGroups:["{atom[1]}"], Resources:["{atom[2]}"]{names}, Verbs:["{atom[3]}"]}}'
            if text not in missing:
                missing.append(text)
    return missing


def _refused(user: UserInfo, plural: str, name: str, missing: list[str], why: str = "") -> ApiError:
    groups = ", ".join(f'"{g}"' for g in user.groups)
    text = why or ("is attempting to grant RBAC permissions not currently held:\n" + "\n".join(missing))
    return ApiError(403, f'{plural}.{RBAC_GROUP} "{name}" is forbidden: user "{user.name}" (groups=[{groups}]) '
                         f"{text}", "Forbidden",
                    details={"name": name, "group": RBAC_GROUP, "kind": plural})


def _held_rules(authz: Authorizer, user: UserInfo, namespace: str) -> list[dict[str, Any]]:
    return authz.cluster_rules(user) + (authz.namespace_rules(user, namespace) if namespace else [])


def check(authz: Authorizer, user: UserInfo, kind: str, namespace: str, obj: dict[str, Any]) -> None:
    """Raise 403 Forbidden when writing ``obj`` (an RBAC object) would grant ``user`` more than it holds."""
    if user.is_master or kind not in ROLE_KINDS and kind not in BINDING_KINDS:
        return
    name = str((obj.get("metadata") or {}).get("name") or "")
    if kind in ROLE_KINDS:
        plural = ROLE_KINDS[kind]
        if authz.allowed(user, Attributes(verb="escalate", group=RBAC_GROUP, resource=plural, namespace=namespace,
                                          name=name)):
            return
        if kind == "ClusterRole" and obj.get("aggregationRule"):
            raise _refused(user, plural, name, [], "must have cluster-admin privileges to use the aggregationRule")
        rules = as_list(obj.get("rules"))
        missing = not_held(_held_rules(authz, user, namespace), rules)
        if missing:
            raise _refused(user, plural, name, missing)
        return
    plural = BINDING_KINDS[kind]
    ref = as_dict(obj.get("roleRef"))
    ref_kind, ref_name = ref.get("kind"), str(ref.get("name") or "")
    ref_plural = ROLE_KINDS.get(str(ref_kind))
    if ref_plural is None:
        return  # the object's own validation refuses an unknown roleRef kind
    if authz.allowed(user, Attributes(verb="bind", group=RBAC_GROUP, resource=ref_plural, namespace=namespace,
                                      name=ref_name)):
        return
    store_key = f"{ref_plural}.{RBAC_GROUP}"
    if authz.core.store.get(store_key, namespace if ref_kind == "Role" else None, ref_name) is None:
        # as the real server: a binding to a role that does not exist needs `bind`
        raise _refused(user, plural, name, [], f'{store_key} "{ref_name}" not found')
    missing = not_held(_held_rules(authz, user, namespace), authz.role_ref_rules(ref, namespace))
    if missing:
        raise _refused(user, plural, name, missing)
