"""What a problem's ``agent_access`` may grant: the rules a problem file is checked by.

Records and rules only (no cluster): :mod:`sregym_core.problems` refuses a grant these rules refuse
when it parses the file, and the engine (:mod:`sregym_core.conductor.grants`) gives and guards the
grants that pass for one attempt.
"""

from __future__ import annotations

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
    return None


def resolve(grant: AgentGrant, app_namespace: str) -> AgentGrant:
    """``grant`` with ``{namespace}`` in its name replaced by the app's namespace."""
    return attrs.evolve(grant, name=grant.name.replace("{namespace}", app_namespace))
