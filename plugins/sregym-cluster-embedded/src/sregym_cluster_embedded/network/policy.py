"""NetworkPolicy evaluation for one connection: ingress of the destination pod, egress of the source pod."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from ..controllers.util import Obj, match_selector


def policy_types(policy: Obj) -> list[str]:
    spec = policy.get("spec", {})
    if spec.get("policyTypes"):
        return list(spec["policyTypes"])
    return ["Ingress"] + (["Egress"] if spec.get("egress") else [])


def selects(policy: Obj, pod: Obj) -> bool:
    return (policy["metadata"].get("namespace") == pod["metadata"].get("namespace")
            and match_selector(policy.get("spec", {}).get("podSelector") or {}, pod["metadata"].get("labels"),
                               empty_matches=True))


def _named_port(pod: Obj | None, name: str, protocol: str) -> int | None:
    for container in (pod or {}).get("spec", {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == name and port.get("protocol", "TCP") == protocol:
                return int(port["containerPort"])
    return None


def port_matches(rule_ports: list[Obj] | None, port: int, protocol: str, target_pod: Obj | None) -> bool:
    if not rule_ports:
        return True
    for entry in rule_ports:
        if entry.get("protocol", "TCP") != protocol:
            continue
        value = entry.get("port")
        if value is None:
            return True
        if isinstance(value, str) and not value.isdigit():
            number = _named_port(target_pod, value, protocol)
            if number == port:
                return True
            continue
        low = int(value)
        high = int(entry.get("endPort") or low)
        if low <= port <= high:
            return True
    return False


def peer_matches(peer: Obj, policy_ns: str, ip: str, pod: Obj | None,
                 ns_labels: Callable[[str], dict[str, str]]) -> bool:
    if "ipBlock" in peer:
        block = peer["ipBlock"] or {}
        try:
            addr = ipaddress.ip_address(ip)
            if addr not in ipaddress.ip_network(block.get("cidr", ""), strict=False):
                return False
            return not any(addr in ipaddress.ip_network(ex, strict=False) for ex in block.get("except") or [])
        except ValueError:
            return False
    if pod is None:
        return False  # selectors only ever match pods
    pod_ns = pod["metadata"].get("namespace", "")
    if "namespaceSelector" in peer:
        if not match_selector(peer["namespaceSelector"] or {}, ns_labels(pod_ns), empty_matches=True):
            return False
    elif pod_ns != policy_ns:
        return False
    if "podSelector" in peer:
        return match_selector(peer["podSelector"] or {}, pod["metadata"].get("labels"), empty_matches=True)
    return True


def allowed(policies: list[Obj], *, src_ip: str, src_pod: Obj | None, dst_ip: str, dst_pod: Obj | None,
            port: int, protocol: str, ns_labels: Callable[[str], dict[str, str]]) -> bool:
    """Would a connection from src to dst:port pass every NetworkPolicy that applies to either end?"""
    if dst_pod is not None:
        ingress = [p for p in policies if selects(p, dst_pod) and "Ingress" in policy_types(p)]
        if ingress and not any(
                port_matches(rule.get("ports"), port, protocol, dst_pod)
                and (not rule.get("from") or any(peer_matches(peer, p["metadata"].get("namespace", ""), src_ip,
                                                              src_pod, ns_labels) for peer in rule["from"]))
                for p in ingress for rule in p.get("spec", {}).get("ingress") or []):
            return False
    if src_pod is not None:
        egress = [p for p in policies if selects(p, src_pod) and "Egress" in policy_types(p)]
        if egress and not any(
                port_matches(rule.get("ports"), port, protocol, dst_pod)
                and (not rule.get("to") or any(peer_matches(peer, p["metadata"].get("namespace", ""), dst_ip,
                                                            dst_pod, ns_labels) for peer in rule["to"]))
                for p in egress for rule in p.get("spec", {}).get("egress") or []):
            return False
    return True
