"""Node lifecycle: stale Leases make a node NotReady/Unknown, condition taints, taint-based eviction.

Also keeps the `node.kubernetes.io/unschedulable` taint in step with `spec.unschedulable` (cordon).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from sregym_core.clusters import is_hidden_namespace

from .base import Controller, Key
from .informer import key_of
from .scheduling import tolerates
from .util import Obj, is_deleting, name_of, now, parse_time, rfc3339
from .writes import api_error_code

COMPONENT = "node-controller"
EVICTION_COMPONENT = "taint-eviction-controller"
UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
#: TaintNodesByCondition: a pressure condition reported True gives the node a NoSchedule taint
CONDITION_TAINTS = {"MemoryPressure": "node.kubernetes.io/memory-pressure",
                    "DiskPressure": "node.kubernetes.io/disk-pressure",
                    "PIDPressure": "node.kubernetes.io/pid-pressure"}
LEASE_NS = "kube-node-lease"
API_DEFAULT_TOLERATION = 300  # what DefaultTolerationSeconds admission writes into every pod
NODE_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")


def ready_status(node: Obj) -> str | None:
    """"True", "False", "Unknown", or None while the node has never reported (still within grace)."""
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status", "Unknown")
    return None


class NodeLifecycleController(Controller):
    name = "nodelifecycle"
    component = COMPONENT

    def setup(self) -> None:
        self.nodes = self.watch("nodes")
        self.leases = self.watch("leases.coordination.k8s.io",
                                 lambda _e, lease, _o: self._lease_event(lease))
        self.pods = self.watch("pods", lambda _e, pod, _o: self._pod_event(pod))
        self.namespaces = self.watch("namespaces", lambda _e, _ns, _o: None)
        self._taint_seen: dict[tuple[str, str, str], datetime] = {}
        self._monitor: asyncio.Task | None = None

    def benchmark_pod(self, pod: Obj) -> bool:
        """A pod of the benchmark's own hidden namespaces (workload generator, observability). They stand
        for machinery outside the cluster under test (on a real cluster: a node pool no fault touches),
        so a node fault never takes them out of their Services nor evicts them: users keep arriving and
        the conductor keeps measuring while every node agent is down."""
        namespace = pod.get("metadata", {}).get("namespace") or ""
        if namespace.startswith("sregym-"):
            return True
        labels = ((self.namespaces.get(None, namespace) or {}).get("metadata") or {}).get("labels") or {}
        return is_hidden_namespace(labels)

    def _lease_event(self, lease: Obj) -> None:
        if lease.get("metadata", {}).get("namespace") == LEASE_NS:
            self.enqueue(("", name_of(lease)))

    def _pod_event(self, pod: Obj) -> None:
        node = pod.get("spec", {}).get("nodeName")
        if node:
            self.enqueue(("", node))

    def start(self) -> None:
        super().start()
        self._monitor = asyncio.create_task(self._tick(), name="node-monitor")

    async def stop(self) -> None:
        if self._monitor:
            self._monitor.cancel()
            try:
                await self._monitor
            except (asyncio.CancelledError, Exception):
                pass
        await super().stop()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.ctx.timings.node_monitor_period)
            for node in self.nodes.list():
                self.enqueue(key_of(node))

    # ------------------------------------------------------------ one node

    def heartbeat(self, node: Obj) -> float | None:
        """Seconds since the node agent last proved it is alive (Lease renewTime or Ready heartbeat)."""
        stamps: list[datetime | None] = []
        lease = self.leases.get(LEASE_NS, name_of(node))
        if lease:
            stamps.append(parse_time((lease.get("spec") or {}).get("renewTime")))
        for cond in (node.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "Ready":
                stamps.append(parse_time(cond.get("lastHeartbeatTime")))
        seen = [s for s in stamps if s]
        if not seen:
            created = parse_time(node.get("metadata", {}).get("creationTimestamp"))
            seen = [created] if created else []
        return (now() - max(seen)).total_seconds() if seen else None

    async def reconcile(self, key: Key) -> None:
        node = self.nodes.get(None, key[1])
        if node is None or is_deleting(node):
            return
        grace = self.ctx.timings.node_monitor_grace_seconds
        age = self.heartbeat(node)
        if age is not None and age > grace and ready_status(node) != "Unknown":
            node = await self._mark_unknown(node)
        node = await self._sync_taints(node)
        await self._evict(node)

    async def _mark_unknown(self, node: Obj) -> Obj:
        stamp = rfc3339()
        conds = []
        for cond in (node.get("status") or {}).get("conditions") or []:
            if cond.get("type") in NODE_CONDITIONS and cond.get("status") != "Unknown":
                cond = dict(cond, status="Unknown", reason="NodeStatusUnknown",
                            message="Kubelet stopped posting node status.", lastTransitionTime=stamp)
            conds.append(cond)
        if not any(c.get("type") == "Ready" for c in conds):
            conds.append({"type": "Ready", "status": "Unknown", "reason": "NodeStatusNeverUpdated",
                          "message": "Kubelet never posted node status.", "lastTransitionTime": stamp,
                          "lastHeartbeatTime": stamp})
        updated = await self.client.patch("nodes", name_of(node), {"status": {"conditions": conds}},
                                          subresource="status")
        self.nodes.upsert(updated)
        await self.ctx.event(updated, "NodeNotReady", f"Node {name_of(node)} status is now: NodeNotReady",
                             component=COMPONENT)
        for pod in self.pods.list():
            if pod.get("spec", {}).get("nodeName") == name_of(node) and not self.benchmark_pod(pod):
                await self._pod_not_ready(pod)
        return updated

    async def _pod_not_ready(self, pod: Obj) -> None:
        conds = [dict(c, status="False", lastTransitionTime=rfc3339()) if c.get("type") == "Ready" and c.get("status") == "True" else c
                 for c in (pod.get("status") or {}).get("conditions") or []]
        try:
            await self.client.patch("pods", name_of(pod), {"status": {"conditions": conds}},
                                    pod["metadata"].get("namespace"), subresource="status")
        except Exception:
            pass

    def wanted_taints(self, node: Obj) -> list[Obj]:
        """Taints this controller owns, given the node's Ready status and cordon flag."""
        out = []
        ready = ready_status(node)
        if ready == "Unknown":
            out += [{"key": UNREACHABLE, "effect": "NoSchedule"}, {"key": UNREACHABLE, "effect": "NoExecute"}]
        elif ready == "False":
            out += [{"key": NOT_READY, "effect": "NoSchedule"}, {"key": NOT_READY, "effect": "NoExecute"}]
        if node.get("spec", {}).get("unschedulable"):
            out.append({"key": UNSCHEDULABLE, "effect": "NoSchedule"})
        if ready == "True":
            for cond in (node.get("status") or {}).get("conditions") or []:
                if cond.get("type") in CONDITION_TAINTS and cond.get("status") == "True":
                    out.append({"key": CONDITION_TAINTS[cond["type"]], "effect": "NoSchedule"})
        return out

    async def _sync_taints(self, node: Obj) -> Obj:
        ours = {UNREACHABLE, NOT_READY, UNSCHEDULABLE, *CONDITION_TAINTS.values()}
        current = node.get("spec", {}).get("taints") or []
        kept = [t for t in current if t.get("key") not in ours]
        have = {(t.get("key"), t.get("effect")): t for t in current if t.get("key") in ours}
        wanted = []
        for taint in self.wanted_taints(node):
            existing = have.get((taint["key"], taint["effect"]))
            if existing:
                wanted.append(existing)
            else:
                if taint["effect"] == "NoExecute":
                    taint = dict(taint, timeAdded=rfc3339())
                wanted.append(taint)
        new = kept + wanted
        if new == current:
            return node
        updated = await self.client.patch("nodes", name_of(node), {"spec": {"taints": new or None}})
        self.nodes.upsert(updated)
        return updated

    async def _evict(self, node: Obj) -> None:
        taints = [t for t in node.get("spec", {}).get("taints") or [] if t.get("effect") == "NoExecute"]
        if not taints:
            return
        for pod in self.pods.list():
            if pod.get("spec", {}).get("nodeName") != name_of(node) or is_deleting(pod) or self.benchmark_pod(pod):
                continue
            wait = self.eviction_delay(pod, taints)
            if wait is None:
                continue
            if wait > 0:
                self.enqueue(("", name_of(node)), wait + 0.05)
                continue
            await self.ctx.event(pod, "TaintManagerEviction",
                                 f"Marking for deletion Pod {pod['metadata'].get('namespace')}/{name_of(pod)}",
                                 component=EVICTION_COMPONENT)
            try:
                await self.client.delete("pods", name_of(pod), pod["metadata"].get("namespace"))
            except Exception as exc:
                if api_error_code(exc) != 404:
                    raise

    def _first_seen_taint(self, pod: Obj, taint: Obj) -> datetime:
        """A taint added by hand has no timeAdded: count from when we first saw it on that node."""
        key = (pod.get("spec", {}).get("nodeName", ""), taint.get("key", ""), taint.get("value", ""))
        return self._taint_seen.setdefault(key, now())

    def _configured(self, tol: Obj, taint: Obj) -> int | None:
        """tolerationSeconds, where the API server's DefaultTolerationSeconds (300) follows our setting."""
        seconds = tol.get("tolerationSeconds")
        if seconds == API_DEFAULT_TOLERATION and tol.get("operator") == "Exists" and \
                tol.get("key") == taint.get("key") and taint.get("key") in (UNREACHABLE, NOT_READY):
            return self.ctx.timings.default_toleration_seconds
        return seconds

    def eviction_delay(self, pod: Obj, taints: list[Obj]) -> float | None:
        """Seconds until the pod must go (0: now), or None when it tolerates every NoExecute taint forever."""
        delays = []
        for taint in taints:
            tols = [t for t in pod.get("spec", {}).get("tolerations") or [] if tolerates({"spec": {"tolerations": [t]}}, taint)]
            if not tols:
                if taint.get("key") in (UNREACHABLE, NOT_READY):
                    # the DefaultTolerationSeconds admission plugin gives every pod this much grace
                    tols = [{"tolerationSeconds": self.ctx.timings.default_toleration_seconds}]
                else:
                    return 0.0
            seconds = [self._configured(t, taint) for t in tols]
            if any(s is None for s in seconds):
                continue
            added = parse_time(taint.get("timeAdded")) or self._first_seen_taint(pod, taint)
            deadline = added + timedelta(seconds=max(0, min(int(s) for s in seconds if s is not None)))
            delays.append((deadline - now()).total_seconds())
        if not delays:
            return None
        return max(0.0, min(delays))


__all__ = ["NodeLifecycleController", "tolerates"]
