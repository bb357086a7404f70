"""Which nodes a node selector term, a pod template or a PersistentVolume admits (kube-scheduler's rules)."""

from __future__ import annotations

HOSTNAME = "kubernetes.io/hostname"


def _labels(node: dict) -> dict[str, str]:
    labels = dict(node["metadata"].get("labels") or {})
    labels.setdefault(HOSTNAME, node["metadata"]["name"])
    return labels


def _expression(expr: dict, values: dict[str, str]) -> bool:
    key, op, wanted = expr.get("key", ""), expr.get("operator", "In"), expr.get("values") or []
    if op == "In":
        return key in values and values[key] in wanted
    if op == "NotIn":
        return key not in values or values[key] not in wanted
    if op == "Exists":
        return key in values
    if op == "DoesNotExist":
        return key not in values
    if op in ("Gt", "Lt") and key in values and wanted:
        try:
            have, bound = int(values[key]), int(wanted[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def term_matches(term: dict, node: dict) -> bool:
    """A nodeSelectorTerm: every expression and field matches (an empty term matches nothing)."""
    exprs, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not exprs and not fields:
        return False
    return (all(_expression(e, _labels(node)) for e in exprs)
            and all(_expression(f, {"metadata.name": node["metadata"]["name"]}) for f in fields))


def matching_nodes(terms: list[dict], nodes: list[dict]) -> set[str]:
    """Names of the nodes any of ``terms`` admits."""
    return {n["metadata"]["name"] for n in nodes if any(term_matches(t, n) for t in terms)}


def template_nodes(pod_spec: dict, nodes: list[dict]) -> set[str]:
    """Names of the nodes a pod spec's nodeSelector and required node affinity admit."""
    selector = pod_spec.get("nodeSelector") or {}
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    out = set()
    for node in nodes:
        labels = _labels(node)
        if any(labels.get(k) != v for k, v in selector.items()):
            continue
        terms = required.get("nodeSelectorTerms") or []
        if terms and not any(term_matches(t, node) for t in terms):
            continue
        out.add(node["metadata"]["name"])
    return out


def schedulable_nodes(nodes: list[dict]) -> list[str]:
    """Names of the nodes that take new pods: not cordoned, no NoSchedule/NoExecute taint."""
    return sorted(n["metadata"]["name"] for n in nodes if not n["spec"].get("unschedulable")
                  and not any(t.get("effect") in ("NoSchedule", "NoExecute") for t in n["spec"].get("taints") or []))
