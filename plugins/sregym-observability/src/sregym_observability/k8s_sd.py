"""Kubernetes service discovery served as Prometheus HTTP SD.

Debian's Prometheus is built without ``kubernetes_sd_configs``, but it has ``http_sd_configs``.
The exporter therefore lists pods and endpoints through the Kubernetes API and serves them as HTTP
SD target groups carrying the very ``__meta_kubernetes_*`` labels Kubernetes SD would set, so
one set of relabel rules works with either discovery mechanism.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

_INVALID = re.compile(r"[^a-zA-Z0-9_]")


def meta_name(name: str) -> str:
    """Prometheus' label-name sanitising: every invalid character becomes ``_``."""
    return _INVALID.sub("_", name)


def _object_labels(prefix: str, obj: Mapping) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    out: dict[str, str] = {}
    for kind, plural in (("label", "labels"), ("annotation", "annotations")):
        for key, value in (meta.get(plural) or {}).items():
            out[f"{prefix}_{kind}_{meta_name(key)}"] = str(value)
            out[f"{prefix}_{kind}present_{meta_name(key)}"] = "true"
    return out


def _ready(pod: Mapping) -> str:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return str(cond.get("status", "unknown")).lower()
    return "unknown"


def pod_target_groups(pods: Sequence[Mapping]) -> list[dict]:
    """Role ``pod``: one target per declared container port, or one per pod without ports."""
    groups = []
    for pod in pods:
        meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        ip = status.get("podIP")
        if not ip:
            continue
        owners = meta.get("ownerReferences") or []
        owner = next((o for o in owners if o.get("controller")), None)
        base = {
            "__meta_kubernetes_namespace": meta.get("namespace", ""),
            "__meta_kubernetes_pod_name": meta.get("name", ""),
            "__meta_kubernetes_pod_ip": ip,
            "__meta_kubernetes_pod_ready": _ready(pod),
            "__meta_kubernetes_pod_phase": status.get("phase", ""),
            "__meta_kubernetes_pod_node_name": spec.get("nodeName", ""),
            "__meta_kubernetes_pod_host_ip": status.get("hostIP", ""),
            "__meta_kubernetes_pod_uid": meta.get("uid", ""),
            **_object_labels("__meta_kubernetes_pod", pod),
        }
        if owner:
            base["__meta_kubernetes_pod_controller_kind"] = owner.get("kind", "")
            base["__meta_kubernetes_pod_controller_name"] = owner.get("name", "")
        emitted = False
        for container in spec.get("containers") or []:
            for port in container.get("ports") or []:
                number = port.get("containerPort")
                if not number:
                    continue
                emitted = True
                groups.append({"targets": [f"{ip}:{number}"], "labels": {
                    **base,
                    "__meta_kubernetes_pod_container_name": container.get("name", ""),
                    "__meta_kubernetes_pod_container_image": container.get("image", ""),
                    "__meta_kubernetes_pod_container_port_name": port.get("name", ""),
                    "__meta_kubernetes_pod_container_port_number": str(number),
                    "__meta_kubernetes_pod_container_port_protocol": port.get("protocol", "TCP"),
                    "__meta_kubernetes_pod_container_init": "false",
                }})
        if not emitted:
            groups.append({"targets": [ip], "labels": base})
    return groups


def endpoints_target_groups(endpoints: Sequence[Mapping], services: Sequence[Mapping] = (),
                            pods: Sequence[Mapping] = ()) -> list[dict]:
    """Role ``endpoints``: one target per address and port, with service and pod metadata."""
    services_by_key = {((s.get("metadata") or {}).get("namespace"), (s.get("metadata") or {}).get("name")): s
                       for s in services}
    pods_by_key = {((p.get("metadata") or {}).get("namespace"), (p.get("metadata") or {}).get("name")): p
                   for p in pods}
    groups = []
    for ep in endpoints:
        meta = ep.get("metadata") or {}
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        base = {"__meta_kubernetes_namespace": ns, "__meta_kubernetes_endpoints_name": name,
                **_object_labels("__meta_kubernetes_endpoints", ep)}
        service = services_by_key.get((ns, name))
        if service is not None:
            base["__meta_kubernetes_service_name"] = name
            base.update(_object_labels("__meta_kubernetes_service", service))
        for subset in ep.get("subsets") or []:
            addresses = [(a, "true") for a in subset.get("addresses") or []]
            addresses += [(a, "false") for a in subset.get("notReadyAddresses") or []]
            for address, ready in addresses:
                for port in subset.get("ports") or []:
                    labels = {**base, "__meta_kubernetes_endpoint_ready": ready,
                              "__meta_kubernetes_endpoint_port_name": port.get("name", ""),
                              "__meta_kubernetes_endpoint_port_protocol": port.get("protocol", "TCP")}
                    target = address.get("targetRef") or {}
                    if target:
                        labels["__meta_kubernetes_endpoint_address_target_kind"] = target.get("kind", "")
                        labels["__meta_kubernetes_endpoint_address_target_name"] = target.get("name", "")
                    pod = pods_by_key.get((ns, target.get("name"))) if target.get("kind") == "Pod" else None
                    if pod is not None:
                        labels["__meta_kubernetes_pod_name"] = target.get("name", "")
                        labels["__meta_kubernetes_pod_node_name"] = (pod.get("spec") or {}).get("nodeName", "")
                        labels.update(_object_labels("__meta_kubernetes_pod", pod))
                    groups.append({"targets": [f"{address.get('ip')}:{port.get('port')}"], "labels": labels})
    return groups
