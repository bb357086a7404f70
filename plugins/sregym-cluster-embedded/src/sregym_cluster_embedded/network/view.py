"""The network's read-only view of the cluster: watched caches of services, endpoints, pods, policies."""

from __future__ import annotations

import logging
from typing import Any

from ..controllers.informer import Informer
from ..controllers.util import Obj, is_deleting, is_pod_ready
from .corefile import CorefileSource

log = logging.getLogger(__name__)


class ClusterView:
    RESOURCES = ("services", "endpoints", "pods", "namespaces", "networkpolicies.networking.k8s.io", "nodes")

    def __init__(self, client: Any, settings: Any) -> None:
        self.client = client
        self.settings = settings
        self.domain = getattr(settings, "cluster_domain", "cluster.local") or "cluster.local"
        self.informers = {r: Informer(client, r) for r in self.RESOURCES}
        self.services, self.endpoints, self.pods, self.namespaces, self.policies, self.nodes = (
            self.informers[r] for r in self.RESOURCES)
        self._pods_by_ip: dict[str, Obj] = {}
        self.pods.add_handler(self._index_pod)
        # the cluster DNS's Corefile (kube-system/coredns), read like CoreDNS reads it
        self.configmaps = Informer(client, "configmaps")
        self.informers["configmaps"] = self.configmaps
        self.corefile = CorefileSource(self.configmaps, log)

    def _index_pod(self, event: str, pod: Obj, old: Obj | None) -> None:
        if old is not None:
            ip = (old.get("status") or {}).get("podIP")
            if ip and self._pods_by_ip.get(ip, {}).get("metadata", {}).get("uid") == old["metadata"].get("uid"):
                self._pods_by_ip.pop(ip, None)
        ip = (pod.get("status") or {}).get("podIP")
        if event != "DELETED" and ip and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            self._pods_by_ip[ip] = pod

    def start(self) -> None:
        for inf in self.informers.values():
            inf.start()

    async def wait_synced(self) -> None:
        for inf in self.informers.values():
            await inf.synced.wait()

    async def stop(self) -> None:
        for inf in self.informers.values():
            await inf.stop()

    def node_ips(self) -> list[str]:
        """InternalIP of every node (where NodePort services listen)."""
        out = []
        for node in self.nodes.list():
            for addr in (node.get("status") or {}).get("addresses") or []:
                if addr.get("type") == "InternalIP" and addr.get("address"):
                    out.append(addr["address"])
        return sorted(set(out))

    def pod_by_ip(self, ip: str) -> Obj | None:
        return self._pods_by_ip.get(ip)

    def namespace_labels(self, name: str) -> dict[str, str]:
        ns = self.namespaces.get(None, name)
        labels = dict((ns or {}).get("metadata", {}).get("labels") or {})
        labels.setdefault("kubernetes.io/metadata.name", name)
        return labels

    def ready_addresses(self, namespace: str, service: str) -> list[Obj]:
        ep = self.endpoints.get(namespace, service)
        out = []
        for subset in (ep or {}).get("subsets") or []:
            for addr in subset.get("addresses") or []:
                out.append(dict(addr, ports=subset.get("ports") or []))
        return out

    def headless_ips(self, namespace: str, service: str, publish_not_ready: bool) -> list[tuple[str, str | None]]:
        """(ip, hostname) of the endpoints behind a headless service."""
        ep = self.endpoints.get(namespace, service)
        out = []
        for subset in (ep or {}).get("subsets") or []:
            addrs = list(subset.get("addresses") or [])
            if publish_not_ready:
                addrs += subset.get("notReadyAddresses") or []
            out += [(a["ip"], a.get("hostname")) for a in addrs]
        if not out:  # Endpoints may lag a moment behind pods; fall back to the pods themselves
            svc = self.services.get(namespace, service) or {}
            selector = svc.get("spec", {}).get("selector") or {}
            if selector:
                for pod in self.pods.list(namespace):
                    labels = pod["metadata"].get("labels") or {}
                    ip = (pod.get("status") or {}).get("podIP")
                    if ip and all(labels.get(k) == v for k, v in selector.items()) and not is_deleting(pod) \
                            and (publish_not_ready or is_pod_ready(pod)):
                        host = pod["spec"].get("hostname") if pod["spec"].get("subdomain") == service else None
                        out.append((ip, host))
        return out
