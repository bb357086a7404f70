"""A per-node connection-tracking table in the service path, sized as kube-proxy sizes nf_conntrack.

kube-proxy reads ``conntrack.maxPerCore`` and ``conntrack.min`` from its configuration (on kubeadm
clusters the ``config.conf`` key of ``kube-system/kube-proxy``) and sets the node's
``nf_conntrack_max`` to ``max(maxPerCore × cores, min)``; ``maxPerCore: 0`` leaves the kernel's value.
Each connection through a Service holds an entry on the caller's node and on the backend's node
while it is open and for ``TIME_WAIT`` (120 s, the kernel's ``nf_conntrack_tcp_timeout_time_wait``)
after it closes. When a node's table is full the kernel drops the new connection's packets and logs
``nf_conntrack: nf_conntrack: table full, dropping packet``; here the proxy holds the connection
unanswered (the caller times out, as on a dropped SYN) and the node gets a ``ConntrackFull``
warning event, as node-problem-detector's network monitor reports it. The benchmark's own pods
(hidden namespaces) stand outside the cluster under test: their end of a connection is on no node
(the workload generator's requests still take an entry on the backend's node). The configuration is re-read
every few seconds (a real kube-proxy applies it when its pods restart).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from typing import Any

import yaml
from sregym_core.clusters import is_hidden_namespace

log = logging.getLogger(__name__)

NAMESPACE, NAME, KEY = "kube-system", "kube-proxy", "config.conf"
DEFAULT_MAX_PER_CORE, DEFAULT_MIN = 32768, 131072
KERNEL_DEFAULT = 262144
TIME_WAIT_S = 120.0
REFRESH_S = 5.0
EVENT_EVERY_S = 30.0

DEFAULT_CONFIG = {
    "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
    "bindAddress": "0.0.0.0", "clusterCIDR": "", "mode": "iptables",
    "conntrack": {"maxPerCore": None, "min": None, "tcpEstablishedTimeout": None, "tcpCloseWaitTimeout": None},
}


def table_max(conntrack: dict, cores: int) -> int:
    """nf_conntrack_max as kube-proxy sets it from ``conntrack.maxPerCore`` and ``conntrack.min``."""
    per_core = conntrack.get("maxPerCore")
    floor = conntrack.get("min")
    per_core = DEFAULT_MAX_PER_CORE if per_core is None else int(per_core)
    floor = DEFAULT_MIN if floor is None else int(floor)
    if per_core == 0:
        return KERNEL_DEFAULT
    return max(per_core * max(cores, 1), floor)


class ConntrackTable:
    """The entries of every node; ``admit`` is asked once per new connection."""

    def __init__(self, view: Any) -> None:
        self.view = view
        self.conntrack: dict = {}
        self.open: collections.Counter[str] = collections.Counter()
        self.closing: dict[str, collections.deque[float]] = collections.defaultdict(collections.deque)
        self.peak: dict[str, collections.deque[tuple[float, int]]] = collections.defaultdict(collections.deque)
        self.drops: collections.Counter[str] = collections.Counter()
        self.dropped_at: dict[str, collections.deque[float]] = collections.defaultdict(collections.deque)
        self._evented: dict[str, float] = {}

    # ------------------------------------------------------------ configuration

    async def ensure_config(self) -> None:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": NAME, "namespace": NAMESPACE,
                                                                      "labels": {"app": "kube-proxy"}},
                "data": {KEY: yaml.safe_dump(DEFAULT_CONFIG, sort_keys=False)}}
        with contextlib.suppress(Exception):
            await self.view.client.create("configmaps", body, NAMESPACE)

    async def run(self) -> None:
        """Create kube-proxy's ConfigMap if missing, then re-read it every REFRESH_S."""
        await self.ensure_config()
        while True:
            await self.reload()
            await asyncio.sleep(REFRESH_S)

    async def reload(self) -> None:
        try:
            obj = await self.view.client.get("configmaps", NAME, NAMESPACE)
            doc = yaml.safe_load((obj.get("data") or {}).get(KEY) or "") or {}
        except Exception as exc:  # noqa: BLE001 - missing or unparsable: keep the last good one
            if getattr(exc, "code", None) == 404:
                self.conntrack = {}
            else:
                log.warning("kube-proxy configuration not reloaded: %s", exc)
            return
        conntrack = doc.get("conntrack") if isinstance(doc, dict) else None
        self.conntrack = conntrack if isinstance(conntrack, dict) else {}

    def cores(self, node: str) -> int:
        obj = self.view.nodes.get(None, node) or {}
        cpu = str(((obj.get("status") or {}).get("capacity") or {}).get("cpu") or "1")
        with contextlib.suppress(ValueError):
            return max(int(float(cpu[:-1]) / 1000) if cpu.endswith("m") else int(float(cpu)), 1)
        return 1

    def max(self, node: str) -> int:
        try:
            return table_max(self.conntrack, self.cores(node))
        except (TypeError, ValueError):
            return KERNEL_DEFAULT

    # ------------------------------------------------------------ entries

    def nodes_for(self, *pods: dict | None) -> set[str]:
        """The nodes whose tables a connection between these pods holds an entry in. The benchmark's
        own pods (hidden namespaces: workload generator, observability) stand outside the cluster
        under test: their end of a connection is on no node."""
        out = set()
        for pod in pods:
            node = ((pod or {}).get("spec") or {}).get("nodeName")
            namespace = ((pod or {}).get("metadata") or {}).get("namespace") or ""
            labels = self.view.namespace_labels(namespace) if namespace else {}
            if node and not is_hidden_namespace(labels):
                out.add(node)
        return out

    def count(self, node: str) -> int:
        closing = self.closing[node]
        cutoff = time.monotonic() - TIME_WAIT_S
        while closing and closing[0] < cutoff:
            closing.popleft()
        return self.open[node] + len(closing)

    def demand(self, node: str) -> int:
        """Entries the node would hold had it dropped nothing (its traffic over the last TIME_WAIT)."""
        dropped = self.dropped_at[node]
        cutoff = time.monotonic() - TIME_WAIT_S
        while dropped and dropped[0] < cutoff:
            dropped.popleft()
        return self.count(node) + len(dropped)

    def _note_peak(self, node: str) -> None:
        now = time.monotonic()
        peaks = self.peak[node]
        peaks.append((now, self.demand(node)))
        while peaks and peaks[0][0] < now - TIME_WAIT_S:
            peaks.popleft()

    def admit(self, nodes: set[str]) -> str | None:
        """Track a new connection through ``nodes``; the node whose table is full (dropped), or None."""
        for node in nodes:
            if self.count(node) >= self.max(node):
                self.drops[node] += 1
                self.dropped_at[node].append(time.monotonic())
                self._note_peak(node)
                return node
        for node in nodes:
            self.open[node] += 1
            self._note_peak(node)
        return None

    def release(self, nodes: set[str]) -> None:
        now = time.monotonic()
        for node in nodes:
            self.open[node] = max(self.open[node] - 1, 0)
            self.closing[node].append(now)

    async def dropped(self, node: str) -> None:
        """The kernel's complaint, as a warning on the node (at most every EVENT_EVERY_S)."""
        now = time.monotonic()
        if now - self._evented.get(node, 0.0) < EVENT_EVERY_S:
            return
        self._evented[node] = now
        obj = self.view.nodes.get(None, node) or {}
        involved = {"kind": "Node", "apiVersion": "v1",
                    "metadata": {"name": node, "uid": (obj.get("metadata") or {}).get("uid", node)}}
        message = "kernel: nf_conntrack: nf_conntrack: table full, dropping packet"  # repeats bump its count
        with contextlib.suppress(Exception):
            await self.view.client.create_event(involved, "ConntrackFull", message, type="Warning",
                                                component="kernel-monitor", host=node)

    def status(self) -> dict[str, dict]:
        out = {}
        for obj in self.view.nodes.list():
            node = obj["metadata"]["name"]
            self._note_peak(node)
            out[node] = {"count": self.count(node), "max": self.max(node), "drops": self.drops[node],
                         "demand": max((c for _, c in self.peak[node]), default=0)}
        return out
