"""Whether the scheduler could put a workload's pods on a given node again.

A node-scoped fault (an impaired network path) is mitigated when the target's pods run elsewhere
*and* the node is kept out of their way: cordoned, tainted against them, or excluded by their pod
template (nodeSelector, required node affinity, nodeName). Pods that merely happened to land on
another node after a restart are one reschedule away from the bad node again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def _tolerates(tolerations: list[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for toleration in tolerations:
        effect = toleration.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        key, operator = toleration.get("key"), toleration.get("operator", "Equal")
        if not key:
            if operator == "Exists":
                return True  # an empty key with Exists tolerates everything
            continue
        if key != taint.get("key"):
            continue
        if operator == "Exists" or toleration.get("value", "") == taint.get("value", ""):
            return True
    return False


def _number(text: Any) -> int | None:
    try:
        return int(str(text))
    except ValueError:
        return None


def _expression_holds(values_of: Mapping[str, str], expression: Mapping[str, Any]) -> bool:
    key: Any = expression.get("key")
    operator = expression.get("operator")
    values = [str(v) for v in expression.get("values") or []]
    present = key in values_of
    value = values_of.get(key)
    if operator == "In":
        return present and value in values
    if operator == "NotIn":
        return not present or value not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and values:
        have, bound = _number(value), _number(values[0])
        if have is None or bound is None:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def _term_matches(node: Mapping[str, Any], term: Mapping[str, Any]) -> bool:
    labels = {str(k): str(v) for k, v in ((node.get("metadata") or {}).get("labels") or {}).items()}
    fields = {"metadata.name": str((node.get("metadata") or {}).get("name", ""))}
    expressions = term.get("matchExpressions") or []
    field_expressions = term.get("matchFields") or []
    if not expressions and not field_expressions:
        return False  # an empty term selects no node
    return (all(_expression_holds(labels, e) for e in expressions)
            and all(_expression_holds(fields, e) for e in field_expressions))


def schedulable_for(node: Mapping[str, Any] | None, pod_spec: Mapping[str, Any]) -> bool:
    """Whether a pod with ``pod_spec`` could be placed on ``node`` (ignoring resources and ports)."""
    if not node:
        return False
    spec = node.get("spec") or {}
    if spec.get("unschedulable"):
        return False
    tolerations = list(pod_spec.get("tolerations") or [])
    for taint in spec.get("taints") or []:
        if taint.get("effect") in _BLOCKING_EFFECTS and not _tolerates(tolerations, taint):
            return False
    name = str((node.get("metadata") or {}).get("name", ""))
    if pod_spec.get("nodeName") and pod_spec["nodeName"] != name:
        return False
    labels = (node.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in (pod_spec.get("nodeSelector") or {}).items()):
        return False
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms")
    if terms is not None and not any(_term_matches(node, t) for t in terms):
        return False
    return True
