"""Pure scheduling predicates: taints, affinity, resources, ports. Reasons use the scheduler's wording."""

from __future__ import annotations

from sregym_core.quantity import quantity_or_zero

from .util import Obj, match_expression, match_selector, pod_requests

# reasons a node fails for, exactly as kube-scheduler words them
UNSCHEDULABLE = "node(s) were unschedulable"
NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
PORTS = "node(s) didn't have free ports for the requested pod ports"
POD_AFFINITY = "node(s) didn't match pod affinity rules"
POD_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
VOLUME_AFFINITY = "node(s) had volume node affinity conflict"
READ_WRITE_ONCE_POD = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
TOO_MANY_PODS = "Too many pods"
# reasons preemption could fix by evicting lower-priority pods
PREEMPTABLE_PREFIXES = ("Insufficient ", TOO_MANY_PODS, PORTS, EXISTING_ANTI_AFFINITY)


def toleration_matches(tol: Obj, taint: Obj) -> bool:
    if tol.get("effect") and tol.get("effect") != taint.get("effect"):
        return False
    if tol.get("operator", "Equal") == "Exists":
        return not tol.get("key") or tol.get("key") == taint.get("key")
    return tol.get("key") == taint.get("key") and (tol.get("value") or "") == (taint.get("value") or "")


def tolerates(pod: Obj, taint: Obj) -> bool:
    return any(toleration_matches(t, taint) for t in pod.get("spec", {}).get("tolerations") or [])


def untolerated_taint(pod: Obj, node: Obj) -> Obj | None:
    for taint in node.get("spec", {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(pod, taint):
            return taint
    return None


def taint_reason(taint: Obj) -> str:
    return f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value', '')}}}"


def node_labels(node: Obj) -> dict[str, str]:
    labels = dict(node.get("metadata", {}).get("labels") or {})
    labels.setdefault("kubernetes.io/hostname", node.get("metadata", {}).get("name", ""))
    return labels


def match_node_selector_term(term: Obj, node: Obj) -> bool:
    labels = node_labels(node)
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False
    if not all(match_expression(e, labels) for e in exprs):
        return False
    field_values = {"metadata.name": node.get("metadata", {}).get("name", "")}
    return all(match_expression(f, field_values) for f in fields)


def matches_node_affinity(pod: Obj, node: Obj) -> bool:
    spec = pod.get("spec", {})
    labels = node_labels(node)
    if not all(labels.get(k) == v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required:
        return any(match_node_selector_term(t, node) for t in required.get("nodeSelectorTerms") or [])
    return True


def preferred_affinity_score(pod: Obj, node: Obj) -> int:
    prefs = ((((pod.get("spec", {}).get("affinity") or {}).get("nodeAffinity") or {})
              .get("preferredDuringSchedulingIgnoredDuringExecution")) or [])
    return sum(int(p.get("weight", 0)) for p in prefs if match_node_selector_term(p.get("preference") or {}, node))


def allocatable(node: Obj) -> dict[str, float]:
    status = node.get("status") or {}
    alloc = status.get("allocatable") or status.get("capacity") or {}
    out = {k: quantity_or_zero(v) for k, v in alloc.items()}
    out.setdefault("pods", 110)
    return out


def resource_reasons(pod: Obj, node: Obj, node_pods: list[Obj]) -> list[str]:
    alloc = allocatable(node)
    used: dict[str, float] = {}
    for other in node_pods:
        for key, value in pod_requests(other).items():
            used[key] = used.get(key, 0.0) + value
    reasons = []
    if len(node_pods) + 1 > alloc["pods"]:
        reasons.append(TOO_MANY_PODS)
    for key, value in sorted(pod_requests(pod).items()):
        if value <= 0:
            continue
        if key in alloc and used.get(key, 0.0) + value > alloc[key] + 1e-9:
            reasons.append(f"Insufficient {key}")
        elif key not in alloc and key not in ("cpu", "memory", "ephemeral-storage"):
            reasons.append(f"Insufficient {key}")
    return reasons


def host_ports(pod: Obj) -> set[tuple[str, str, int]]:
    ports = set()
    for container in pod.get("spec", {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("hostPort"):
                ports.add((port.get("hostIP") or "0.0.0.0", port.get("protocol") or "TCP", int(port["hostPort"])))
    return ports


def ports_conflict(pod: Obj, node_pods: list[Obj]) -> bool:
    wanted = host_ports(pod)
    if not wanted:
        return False
    taken = set().union(*(host_ports(p) for p in node_pods)) if node_pods else set()
    for ip, proto, port in wanted:
        for tip, tproto, tport in taken:
            if port == tport and proto == tproto and (ip == tip or "0.0.0.0" in (ip, tip)):
                return True
    return False


def _term_matches(term: Obj, owner_ns: str, other: Obj) -> bool:
    namespaces = term.get("namespaces") or [owner_ns]
    if other.get("metadata", {}).get("namespace") not in namespaces and not term.get("namespaceSelector") == {}:
        return False
    return match_selector(term.get("labelSelector"), other.get("metadata", {}).get("labels"), empty_matches=False)


def _required(pod: Obj, kind: str) -> list[Obj]:
    return ((((pod.get("spec", {}).get("affinity") or {}).get(kind) or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution")) or [])


def pod_affinity_reason(pod: Obj, node: Obj, nodes: dict[str, Obj], placed: list[Obj]) -> str | None:
    """Required pod affinity / anti-affinity of the incoming pod, and anti-affinity of existing pods."""
    ns = pod.get("metadata", {}).get("namespace", "")

    def topo(node_name: str, key: str) -> str | None:
        other = nodes.get(node_name)
        return node_labels(other).get(key) if other else None

    here = node_labels(node)
    for term in _required(pod, "podAffinity"):
        key = term.get("topologyKey", "kubernetes.io/hostname")
        matching = [p for p in placed if _term_matches(term, ns, p)]
        if not matching:
            # the first pod of a group that selects itself may go anywhere
            if _term_matches(term, ns, pod):
                continue
            return POD_AFFINITY
        if not any(topo(p["spec"]["nodeName"], key) == here.get(key) and here.get(key) is not None for p in matching):
            return POD_AFFINITY
    for term in _required(pod, "podAntiAffinity"):
        key = term.get("topologyKey", "kubernetes.io/hostname")
        if here.get(key) is None:
            continue
        if any(_term_matches(term, ns, p) and topo(p["spec"]["nodeName"], key) == here.get(key) for p in placed):
            return POD_ANTI_AFFINITY
    for other in placed:
        for term in _required(other, "podAntiAffinity"):
            key = term.get("topologyKey", "kubernetes.io/hostname")
            if (here.get(key) is not None and topo(other["spec"]["nodeName"], key) == here.get(key)
                    and _term_matches(term, other.get("metadata", {}).get("namespace", ""), pod)):
                return EXISTING_ANTI_AFFINITY
    return None


def summarize(total: int, reasons: dict[str, int]) -> str:
    """`0/3 nodes are available: 1 node(s) had …, 2 Insufficient memory.` (sorted as the scheduler does)."""
    parts = sorted(f"{count} {reason}" for reason, count in reasons.items())
    return f"0/{total} nodes are available: {', '.join(parts)}."
