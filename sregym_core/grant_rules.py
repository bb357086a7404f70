"""What a problem's ``agent_access`` may grant: the rules a problem file is checked by.

Records and rules only (no cluster): :mod:`sregym_core.problems` refuses a grant these rules refuse
when it parses the file, and the engine (:mod:`sregym_core.conductor.grants`) gives and guards the
grants that pass for one attempt.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import attrs

from .types import AgentGrant

BENCHMARK_NAMESPACE = "sregym-system"
ADMISSION = "admissionregistration.k8s.io"

#: (group, resource) -> namespaced?  Only objects a cluster-level fix edits; never Secrets, RBAC,
#: tokens or anything else that would widen the agent's reach.
GRANTABLE: dict[tuple[str, str], bool] = {
    ("", "configmaps"): True,
    (ADMISSION, "validatingwebhookconfigurations"): False,
    (ADMISSION, "mutatingwebhookconfigurations"): False,
    ("apps", "daemonsets"): True,  # a node-level component's rollout (kube-system/kube-proxy)
    ("crd.projectcalico.org", "ippools"): False,  # the CNI's pod address pool
    ("crd.projectcalico.org", "bgppeers"): False,  # the CNI's BGP peering (route reflectors)
}
VERBS = ("get", "patch", "update")


def check_grant(grant: AgentGrant) -> str | None:
    """Why ``grant`` cannot be given (a problem-file error), or None."""
    key = (grant.group, grant.resource)
    if key not in GRANTABLE:
        allowed = ", ".join(f"{g + '/' if g else ''}{r}" for g, r in GRANTABLE)
        return f"{grant.group + '/' if grant.group else ''}{grant.resource} cannot be granted (grantable: {allowed})"
    if GRANTABLE[key] and not grant.namespace:
        return f"{grant.resource} are namespaced: give the object's namespace"
    if not GRANTABLE[key] and grant.namespace:
        return f"{grant.resource} are cluster-scoped: give no namespace"
    if grant.namespace in (BENCHMARK_NAMESPACE,) or (grant.namespace or "").startswith("sregym-"):
        return f"namespace {grant.namespace} is the benchmark's own and is never granted"
    if "{namespace}" in (grant.namespace or ""):
        return "the namespace cannot be templated: name it"
    bad = [v for v in grant.verbs if v not in VERBS]
    if bad:
        return f"verbs {bad} cannot be granted (only {', '.join(VERBS)}: no create, delete, list or watch)"
    for path, mode in grant.may_change.items():
        if mode not in ("any", "remove-lines"):
            return f"may_change[{path!r}] must be 'any' or 'remove-lines'"
        if path.split(".")[0] in ("metadata", "apiVersion", "kind"):
            return f"may_change[{path!r}]: metadata, apiVersion and kind never change"
    return _check_standing(grant)


def _check_standing(grant: AgentGrant) -> str | None:
    standing = grant.standing
    if standing is None:
        return None
    if not isinstance(standing, dict):
        return "standing must be the object's healthy form (a mapping with apiVersion and kind)"
    missing = [key for key in ("apiVersion", "kind") if not isinstance(standing.get(key), str)]
    if missing:
        return f"standing needs {' and '.join(missing)}"
    version = standing["apiVersion"]
    group = version.split("/")[0] if "/" in version else ""
    if group != grant.group:
        return f"standing's apiVersion {version!r} is not of the grant's group {grant.group!r}"
    if "metadata" in standing:
        return "standing gives no metadata: the name and namespace are the grant's"
    return None


def collection_path(grant: AgentGrant) -> str:
    """The API path of the granted object's collection (``/api/v1/namespaces/kube-system/configmaps``)."""
    base = f"/apis/{grant.group}/v1" if grant.group else "/api/v1"
    ns = f"/namespaces/{grant.namespace}" if grant.namespace else ""
    return f"{base}{ns}/{grant.resource}"


def object_path(grant: AgentGrant) -> str:
    """The API path of the granted object itself."""
    return f"{collection_path(grant)}/{grant.name}"


def resolve(grant: AgentGrant, app_namespace: str) -> AgentGrant:
    """``grant`` with ``{namespace}`` in its name replaced by the app's namespace."""
    return attrs.evolve(grant, name=grant.name.replace("{namespace}", app_namespace))


#: what the API server itself changes on every write
_SERVER_FIELDS = ("resourceVersion", "generation", "managedFields", "creationTimestamp", "uid")
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


# --------------------------------------------------------------------------- what may change


def _split(path: str) -> list[str]:
    return [p for p in re.split(r"\.|(\[\*\])", path) if p]


def _masked(obj: Any, parts: list[str]) -> Any:
    """``obj`` with the field at ``parts`` removed (``[*]``: in every item of a list)."""
    if not parts:
        return None
    head, rest = parts[0], parts[1:]
    if head == "[*]":
        return [_masked(item, rest) for item in obj] if isinstance(obj, list) else obj
    if not isinstance(obj, dict) or head not in obj:
        return obj
    out = dict(obj)
    if rest:
        out[head] = _masked(obj[head], rest)
    else:
        out.pop(head)
    return out


def _values(obj: Any, parts: list[str]) -> list[Any]:
    if not parts:
        return [obj]
    head, rest = parts[0], parts[1:]
    if head == "[*]":
        return [v for item in obj for v in _values(item, rest)] if isinstance(obj, list) else []
    if not isinstance(obj, dict) or head not in obj:
        return [None]
    return _values(obj[head], rest)


def _lines(text: Any) -> list[str]:
    """A text's meaningful lines: comments and blank lines dropped, whitespace collapsed."""
    out = []
    for line in str(text or "").splitlines():
        line = " ".join(line.split("#", 1)[0].split())
        if line:
            out.append(line)
    return out


def _only_removed(before: Any, after: Any) -> bool:
    """Whether ``after``'s lines are ``before``'s with some lines deleted (order kept, none added)."""
    remaining = iter(_lines(before))
    return all(any(line == old for old in remaining) for line in _lines(after))


def _comparable(obj: dict, grant: AgentGrant) -> dict:
    obj = copy.deepcopy(obj)
    meta = obj.get("metadata") or {}
    for key in _SERVER_FIELDS:
        meta.pop(key, None)
    annotations = dict(meta.get("annotations") or {})
    annotations.pop(_LAST_APPLIED, None)
    meta["annotations"] = annotations or None
    obj.pop("status", None)
    for path in grant.may_change:
        obj = _masked(obj, _split(path))
    return obj


def violations(before: dict | None, after: dict | None, grant: AgentGrant) -> list[str]:
    """How ``after`` changed ``before`` beyond what ``grant`` allows (empty: within the grant)."""
    if before is None:
        return []
    if after is None:
        return [f"{grant.resource}/{grant.name} was deleted"]
    found = []
    if _comparable(before, grant) != _comparable(after, grant):
        found.append(f"{grant.resource}/{grant.name} changed outside {sorted(grant.may_change)}")
    for path, mode in grant.may_change.items():
        if mode != "remove-lines":
            continue
        olds, news = _values(before, _split(path)), _values(after, _split(path))
        if len(olds) != len(news) or not all(_only_removed(o, n) for o, n in zip(olds, news, strict=True)):
            found.append(f"{grant.resource}/{grant.name}: {path} gained lines (only deleting lines is allowed)")
    return found


#: where the engine leaves an attempt's grants for a cluster that checks them at admission (namespace,
#: name): the embedded API server refuses a write beyond a grant before it is stored, so nothing (a
#: DaemonSet's rollout) acts on it first; other clusters ignore the ConfigMap (the guard undoes instead)
GRANTS_CONFIGMAP = (BENCHMARK_NAMESPACE, "sregym-agent-grants")


def grants_configmap(grants: list[AgentGrant]) -> dict[str, Any]:
    """The ConfigMap that carries ``grants`` (resolved) for admission."""
    items = [{"group": g.group, "resource": g.resource, "namespace": g.namespace, "name": g.name,
              "verbs": list(g.verbs), "may_change": dict(g.may_change)} for g in grants]
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": GRANTS_CONFIGMAP[1], "namespace": GRANTS_CONFIGMAP[0]},
            "data": {"grants": json.dumps(items, sort_keys=True)}}


def grants_from_configmap(obj: dict[str, Any] | None) -> list[AgentGrant]:
    """The grants a :func:`grants_configmap` ConfigMap carries (none for anything else)."""
    try:
        items = json.loads(((obj or {}).get("data") or {}).get("grants") or "[]")
        return [AgentGrant(resource=i["resource"], name=i["name"], verbs=tuple(i.get("verbs") or ()),
                           may_change=dict(i.get("may_change") or {}), group=i.get("group") or "",
                           namespace=i.get("namespace")) for i in items]
    except (ValueError, KeyError, TypeError):
        return []



# --------------------------------------------------------------------------- the same rights in every attempt


def _object_key(grant: AgentGrant) -> tuple[str, str, str, str]:
    return (grant.group, grant.resource, grant.namespace or "", grant.name)


def uniform_grants(own: list[AgentGrant] | tuple[AgentGrant, ...], known: list[AgentGrant] | tuple[AgentGrant, ...],
                   app_namespace: str) -> tuple[list[AgentGrant], list[AgentGrant]]:
    """The rights an attempt's agent holds: ``(granted, held)``, alike for every problem.

    Which cluster objects a problem grants names its fault's layer (``kubectl auth can-i --list`` is
    the first thing an agent may run), so every attempt holds the same verbs on every object that
    ``known`` (the grants of every problem installed) names. ``granted`` are the problem's own objects
    it may change (its own ``may_change``); ``held`` are the others, and its own objects it only lets
    the agent read: they take the widest ``may_change`` any problem gives them (so a write is refused
    or accepted as in the problem where they are the fault), and any change of them still standing
    when the mitigation is graded fails it (:class:`sregym_core.conductor.grants.GrantGuard`).
    """
    own = [resolve(g, app_namespace) for g in own]
    every = [resolve(g, app_namespace) for g in known] + own
    verbs: dict[tuple[str, str, str, str], set[str]] = {}
    widest: dict[tuple[str, str, str, str], dict[str, str]] = {}
    first: dict[tuple[str, str, str, str], AgentGrant] = {}
    standing: dict[tuple[str, str, str, str], Any] = {}
    for grant in every:
        key = _object_key(grant)
        first.setdefault(key, grant)
        if grant.standing is not None:
            standing.setdefault(key, grant.standing)
        verbs.setdefault(key, set()).update(grant.verbs)
        modes = widest.setdefault(key, {})
        for path, mode in grant.may_change.items():
            modes[path] = "any" if "any" in (mode, modes.get(path)) else mode

    def ordered(key: tuple[str, str, str, str]) -> tuple[str, ...]:
        return tuple(v for v in VERBS if v in verbs[key])

    granted, held = [], []
    for grant in own:
        key = _object_key(grant)
        if {"patch", "update"} & set(grant.verbs):
            granted.append(attrs.evolve(grant, verbs=ordered(key), standing=standing.get(key)))
        else:  # read-only in the problem: it looks writable like everywhere else, and no change may stay
            held.append(attrs.evolve(grant, verbs=ordered(key), may_change=widest[key], standing=standing.get(key)))
    own_keys = {_object_key(g) for g in own}
    for key in sorted(first):
        if key not in own_keys:
            held.append(attrs.evolve(first[key], verbs=ordered(key), may_change=widest[key],
                                     standing=standing.get(key)))
    return granted, held
