"""Admission that depends on who writes: RBAC escalation (escalation.py), where Endpoints point, and
which ServiceAccount a pod or pod template may name and what a pod of a stronger account may run
(account_admission.py; its exec/attach/ephemeral-container rule is called from the subresource paths).

On this cluster every pod, Service and host listener shares one network namespace and 127.0.0.0/8,
so an Endpoints object is a routing rule: the service proxy forwards a Service's traffic to
whatever address its Endpoints name. The endpoints controller only ever writes the addresses of
the Service's own pods; anyone else (an agent, a ServiceAccount it made) may point Endpoints and
EndpointSlices only at pods of the object's own namespace. Addresses of the hidden namespaces'
pods, the API server, the nodes, the workload generator, Prometheus, the agent API or another
cluster on the machine are refused with 422 Invalid naming the field. Members of
``system:masters`` (the cluster's own controllers, the benchmark) are not checked.
"""

from __future__ import annotations

from typing import Any

from . import account_admission, escalation
from .errors import invalid
from .rbac import Authorizer, UserInfo

GUARDED_KINDS = {("", "Endpoints"), ("discovery.k8s.io", "EndpointSlice"),
                 *(((escalation.RBAC_GROUP, kind) for kind in (*escalation.ROLE_KINDS, *escalation.BINDING_KINDS)))}


def guarded(group: str, kind: str) -> bool:
    return (group, kind) in GUARDED_KINDS or account_admission.guarded(group, kind)


def _pod_ips(core: Any, namespace: str) -> set[str]:
    ips: set[str] = set()
    for pod in core.store.list("pods", namespace):
        status = pod.get("status") or {}
        if status.get("podIP"):
            ips.add(status["podIP"])
        ips.update(p["ip"] for p in status.get("podIPs") or [] if isinstance(p, dict) and p.get("ip"))
    return ips


def _addresses(kind: str, obj: dict[str, Any]) -> list[tuple[str, Any]]:
    """(field path, address) of every address an Endpoints or EndpointSlice names."""
    out: list[tuple[str, Any]] = []
    if kind == "Endpoints":
        for i, subset in enumerate(obj.get("subsets") or []):
            if not isinstance(subset, dict):
                continue
            for part in ("addresses", "notReadyAddresses"):
                for j, addr in enumerate(subset.get(part) or []):
                    out.append((f"subsets[{i}].{part}[{j}].ip", addr.get("ip") if isinstance(addr, dict) else addr))
    else:
        for i, endpoint in enumerate(obj.get("endpoints") or []):
            if not isinstance(endpoint, dict):
                continue
            for j, addr in enumerate(endpoint.get("addresses") or []):
                out.append((f"endpoints[{i}].addresses[{j}]", addr))
    return out


def check_endpoints(core: Any, kind: str, group: str, namespace: str, obj: dict[str, Any]) -> None:
    """422 Invalid when an Endpoints/EndpointSlice names an address that is no pod of ``namespace``."""
    pods = _pod_ips(core, namespace)
    causes = [("FieldValueInvalid", f'Invalid value: "{addr}": may only name the address of a pod in namespace '
                                    f'"{namespace}"', field)
              for field, addr in _addresses(kind, obj) if not isinstance(addr, str) or addr not in pods]
    if causes:
        raise invalid(kind, group, str((obj.get("metadata") or {}).get("name") or ""), causes)


def admit(core: Any, authz: Authorizer, user: UserInfo, group: str, kind: str, namespace: str | None,
          obj: Any, stored: Any = None) -> None:
    """Refuse ``user``'s write of ``obj`` (replacing ``stored``, if any) when it escalates RBAC, points
    Endpoints outside the namespace, runs pods as a ServiceAccount stronger than ``user`` or changes
    the command of pods running as one."""
    if user.is_master:
        account_admission.remember(core, group, kind, namespace or "", obj, stored)
        return
    if not isinstance(obj, dict) or not guarded(group, kind):
        return
    if account_admission.guarded(group, kind):
        account_admission.check(authz, user, group, kind, namespace or "", obj, stored)
    elif kind in ("Endpoints", "EndpointSlice"):
        check_endpoints(core, kind, group, namespace or "", obj)
    else:
        escalation.check(authz, user, kind, namespace or "", obj)
