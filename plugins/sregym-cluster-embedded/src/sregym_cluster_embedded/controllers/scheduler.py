"""default-scheduler: filters, least-allocated scoring, binding, FailedScheduling and preemption."""

from __future__ import annotations

import itertools

from . import scheduling as sch
from .base import Controller, Key
from .informer import key_of
from .util import Obj, is_deleting, name_of, pod_requests, rfc3339, uid_of
from .writes import api_error_code

COMPONENT = "default-scheduler"
RETRY_SECONDS = 5.0
SELECTED_NODE = "volume.kubernetes.io/selected-node"


def priority_of(pod: Obj) -> int:
    return int(pod.get("spec", {}).get("priority") or 0)


def wants_us(pod: Obj) -> bool:
    spec = pod.get("spec", {})
    return (not spec.get("nodeName") and spec.get("schedulerName", COMPONENT) == COMPONENT
            and not is_deleting(pod) and (pod.get("status") or {}).get("phase", "Pending") == "Pending")


class Scheduler(Controller):
    name = "scheduler"
    component = COMPONENT

    def setup(self) -> None:
        self.pods = self.watch("pods", self._pod_event)
        self.nodes = self.watch("nodes", lambda _e, _n, _o: self._retry_all())
        self.pvcs = self.watch("persistentvolumeclaims", lambda _e, _p, _o: self._retry_all())
        self.pvs = self.ctx.informer("persistentvolumes")
        self.classes = self.ctx.informer("storageclasses.storage.k8s.io")
        self.priorities = self.ctx.informer("priorityclasses.scheduling.k8s.io")
        self._rotation = itertools.count()
        self.unschedulable: set[Key] = set()

    def _pod_event(self, event: str, pod: Obj, old: Obj | None) -> None:
        if wants_us(pod) and event != "DELETED":
            self.enqueue(key_of(pod))
        elif pod.get("spec", {}).get("nodeName") and (event == "DELETED" or is_deleting(pod)
                                                      or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")):
            self._retry_all()  # resources were freed

    def _retry_all(self) -> None:
        for key in list(self.unschedulable):
            self.enqueue(key, 0.2)

    # ------------------------------------------------------------ one scheduling cycle

    def placed_pods(self) -> dict[str, list[Obj]]:
        by_node: dict[str, list[Obj]] = {}
        for pod in self.pods.list():
            node = pod.get("spec", {}).get("nodeName")
            if node and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                by_node.setdefault(node, []).append(pod)
        return by_node

    def with_nominated(self, pod: Obj, by_node: dict[str, list[Obj]]) -> dict[str, list[Obj]]:
        """Placed pods plus the pending pods nominated to a node by an earlier preemption, when they
        rank at least as high as ``pod``: the space their victims free is reserved for them, so
        the victims' replacements (or a later preemptor) do not take it and preemption does not loop."""
        mine, me = priority_of(pod), key_of(pod)
        out = {name: list(pods) for name, pods in by_node.items()}
        for other in self.pods.list():
            node = (other.get("status") or {}).get("nominatedNodeName")
            if node and wants_us(other) and key_of(other) != me and priority_of(self._with_priority(other)) >= mine:
                out.setdefault(node, []).append(other)
        return out

    def _victims_terminating(self, pod: Obj, by_node: dict[str, list[Obj]]) -> bool:
        """A pod that already preempted waits while its victims terminate instead of preempting again
        (kube-scheduler's PodEligibleToPreemptOthers)."""
        node: str | None = (pod.get("status") or {}).get("nominatedNodeName")
        mine = priority_of(pod)
        if not node:
            return False
        return any(is_deleting(p) and priority_of(p) < mine for p in by_node.get(node, []))

    def filter_node(self, pod: Obj, node: Obj, nodes: dict[str, Obj], by_node: dict[str, list[Obj]]) -> list[str]:
        """Reasons this node cannot take the pod (empty when it fits), in kube-scheduler plugin order."""
        if node.get("spec", {}).get("unschedulable") and not sch.tolerates(
                pod, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}):
            return [sch.UNSCHEDULABLE]
        taint = sch.untolerated_taint(pod, node)
        if taint is not None:
            return [sch.taint_reason(taint)]
        if not sch.matches_node_affinity(pod, node):
            return [sch.NODE_AFFINITY]
        here = by_node.get(name_of(node), [])
        if sch.ports_conflict(pod, here):
            return [sch.PORTS]
        reasons = sch.resource_reasons(pod, node, here)
        if reasons:
            return reasons
        if not self.volumes_fit(pod, node):
            return [sch.VOLUME_AFFINITY]
        placed = [p for ps in by_node.values() for p in ps]
        reason = sch.pod_affinity_reason(pod, node, nodes, placed)
        return [reason] if reason else []

    def volume_problem(self, pod: Obj) -> str | None:
        """Pre-filter: missing claims or unbound Immediate claims stop scheduling on every node."""
        ns = pod["metadata"].get("namespace", "")
        for vol in pod.get("spec", {}).get("volumes") or []:
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            if not claim:
                continue
            pvc = self.pvcs.get(ns, claim)
            if pvc is None:
                return f'persistentvolumeclaim "{claim}" not found'
            if is_deleting(pvc):
                return f'persistentvolumeclaim "{claim}" is being deleted'
            if "ReadWriteOncePod" in (pvc.get("spec", {}).get("accessModes") or []) and self._claim_in_use(pod, claim):
                return sch.READ_WRITE_ONCE_POD  # VolumeRestrictions: one pod in the whole cluster
            if (pvc.get("status") or {}).get("phase") != "Bound" and not pvc.get("spec", {}).get("volumeName"):
                if self._binding_mode(pvc) != "WaitForFirstConsumer":
                    return "pod has unbound immediate PersistentVolumeClaims"
        return None

    def _claim_in_use(self, pod: Obj, claim: str) -> bool:
        """Whether another pod placed on a node (and not finished) mounts the claim."""
        ns, me = pod["metadata"].get("namespace", ""), key_of(pod)
        for other in self.pods.list(ns):
            if key_of(other) == me or not other.get("spec", {}).get("nodeName") or \
                    (other.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            if any((v.get("persistentVolumeClaim") or {}).get("claimName") == claim
                   for v in other.get("spec", {}).get("volumes") or []):
                return True
        return False

    def _binding_mode(self, pvc: Obj) -> str:
        cls = self.classes.get(None, pvc.get("spec", {}).get("storageClassName") or "standard")
        return (cls or {}).get("volumeBindingMode", "WaitForFirstConsumer")

    def volumes_fit(self, pod: Obj, node: Obj) -> bool:
        ns = pod["metadata"].get("namespace", "")
        for vol in pod.get("spec", {}).get("volumes") or []:
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            pvc = self.pvcs.get(ns, claim) if claim else None
            selected = ((pvc or {}).get("metadata", {}).get("annotations") or {}).get(SELECTED_NODE)
            if pvc is not None and not pvc.get("spec", {}).get("volumeName") and selected and selected != name_of(node):
                return False  # a volume is being provisioned for another node already
            volume = pvc and pvc.get("spec", {}).get("volumeName")
            pv = self.pvs.get(None, volume) if volume else None
            required = ((pv or {}).get("spec", {}).get("nodeAffinity") or {}).get("required")
            if required and not any(sch.match_node_selector_term(t, node)
                                    for t in required.get("nodeSelectorTerms") or []):
                return False
        return True

    def score(self, pod: Obj, node: Obj, here: list[Obj]) -> float:
        alloc = sch.allocatable(node)
        want = pod_requests(pod)
        used: dict[str, float] = {}
        for other in here + [pod]:
            for k, v in pod_requests(other).items():
                used[k] = used.get(k, 0.0) + v
        free = []
        for res in ("cpu", "memory"):
            cap = alloc.get(res, 0.0)
            if cap > 0:
                free.append(max(0.0, cap - used.get(res, 0.0)) / cap)
        least_allocated = 100 * sum(free) / len(free) if free else 0.0
        # spreading by pod count keeps request-less pods from piling on one node
        spread = 100 * (1 - (len(here) + 1) / max(alloc.get("pods", 110), 1))
        del want
        return least_allocated + spread * 0.5 + sch.preferred_affinity_score(pod, node)

    async def reconcile(self, key: Key) -> None:
        pod = self.pods.get(*key)
        if pod is None or not wants_us(pod):
            self.unschedulable.discard(key)
            return
        pod = self._with_priority(pod)
        nodes = {name_of(n): n for n in self.nodes.list()}
        by_node = self.with_nominated(pod, self.placed_pods())
        total = len(nodes)
        problem = self.volume_problem(pod)
        if problem:
            await self._fail(pod, f"0/{total} nodes are available: {problem}. preemption: 0/{total} nodes are "
                                  f"available: {total} Preemption is not helpful for scheduling.")
            return
        fits, failures = [], {}
        for node_name in sorted(nodes):
            reasons = self.filter_node(pod, nodes[node_name], nodes, by_node)
            if reasons:
                failures[node_name] = reasons
            else:
                fits.append(nodes[node_name])
        if fits:
            turn = next(self._rotation)
            best = max(enumerate(fits), key=lambda it: (self.score(pod, it[1], by_node.get(name_of(it[1]), [])),
                                                        -((it[0] - turn) % len(fits))))[1]
            await self._bind(pod, best)
            return
        if total == 0:
            await self._fail(pod, "no nodes available to schedule pods")
            return
        counts: dict[str, int] = {}
        for reasons in failures.values():
            for reason in reasons:
                counts[reason] = counts.get(reason, 0) + 1
        message = sch.summarize(total, counts)
        if self._victims_terminating(pod, by_node):
            await self._fail(pod, message)
            return
        preemption = await self._preempt(pod, nodes, by_node, failures)
        if preemption:
            message += " " + preemption
        await self._fail(pod, message)

    def _with_priority(self, pod: Obj) -> Obj:
        spec = pod.get("spec", {})
        if spec.get("priority") is None and spec.get("priorityClassName"):
            cls = self.priorities.get(None, spec["priorityClassName"])
            if cls is not None:
                pod = dict(pod, spec=dict(spec, priority=int(cls.get("value") or 0)))
        return pod

    # ------------------------------------------------------------ preemption

    async def _preempt(self, pod: Obj, nodes: dict[str, Obj], by_node: dict[str, list[Obj]],
                       failures: dict[str, list[str]]) -> str:
        total = len(nodes)
        helpless = {n for n, rs in failures.items() if not all(r.startswith(sch.PREEMPTABLE_PREFIXES) for r in rs)}
        candidates: list[tuple[int, int, str, list[Obj]]] = []
        policy = pod.get("spec", {}).get("preemptionPolicy", "PreemptLowerPriority")
        if policy != "Never":
            for node_name in sorted(set(failures) - helpless):
                victims = self._victims(pod, nodes[node_name], nodes, by_node)
                if victims is not None:
                    candidates.append((max(priority_of(v) for v in victims), len(victims), node_name, victims))
        if not candidates:
            parts = []
            if helpless:
                parts.append(f"{len(helpless)} Preemption is not helpful for scheduling")
            if len(failures) - len(helpless):
                parts.append(f"{len(failures) - len(helpless)} No preemption victims found for incoming pod")
            return f"preemption: 0/{total} nodes are available: {', '.join(sorted(parts))}."
        _, _, node_name, victims = min(candidates, key=lambda c: (c[0], c[1], c[2]))
        for victim in victims:
            await self.ctx.event(victim, "Preempted",
                                 f"Preempted by pod {uid_of(pod)} on node {node_name}", component=COMPONENT)
            try:
                await self.client.delete("pods", name_of(victim), victim["metadata"].get("namespace"))
            except Exception as exc:
                if api_error_code(exc) != 404:
                    raise
        try:
            await self.client.patch("pods", name_of(pod), {"status": {"nominatedNodeName": node_name}},
                                    pod["metadata"].get("namespace"), subresource="status")
        except Exception:
            pass
        self.enqueue(key_of(pod), 0.5)
        return ""  # preemption went ahead; the pod waits for its nominated node

    def _victims(self, pod: Obj, node: Obj, nodes: dict[str, Obj], by_node: dict[str, list[Obj]]) -> list[Obj] | None:
        mine = priority_of(pod)
        here = list(by_node.get(name_of(node), []))
        # pods already terminating free their space anyway; nominated pods are not running to evict
        lower = sorted((p for p in here if priority_of(p) < mine and not is_deleting(p)
                        and p.get("spec", {}).get("nodeName")), key=priority_of)
        if not lower:
            return None
        victims: list[Obj] = []
        for victim in lower:
            victims.append(victim)
            remaining = [p for p in here if p not in victims]
            trial = dict(by_node, **{name_of(node): remaining})
            if not self.filter_node(pod, node, nodes, trial):
                return victims
        return None

    # ------------------------------------------------------------ outcomes

    async def _bind(self, pod: Obj, node: Obj) -> None:
        ns, name, node_name = pod["metadata"].get("namespace", ""), name_of(pod), name_of(node)
        await self._select_volume_nodes(pod, node_name)
        if not self._claims_bound(pod):
            # PreBind: wait until the provisioner has bound the claims, as the VolumeBinding plugin does
            self.enqueue((ns, name), 0.1)
            return
        bound = await bind_pod(self.client, pod, node_name)
        self.unschedulable.discard((ns, name))
        if bound:
            self.pods.upsert(bound)
        await self.ctx.event(pod, "Scheduled", f"Successfully assigned {ns}/{name} to {node_name}",
                             component=COMPONENT)

    def _claims_bound(self, pod: Obj) -> bool:
        ns = pod["metadata"].get("namespace", "")
        for vol in pod.get("spec", {}).get("volumes") or []:
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            pvc = self.pvcs.get(ns, claim) if claim else None
            if pvc is not None and not (pvc.get("spec", {}).get("volumeName")
                                        and (pvc.get("status") or {}).get("phase") == "Bound"):
                return False
        return True

    async def _select_volume_nodes(self, pod: Obj, node_name: str) -> None:
        ns = pod["metadata"].get("namespace", "")
        for vol in pod.get("spec", {}).get("volumes") or []:
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            pvc = self.pvcs.get(ns, claim) if claim else None
            if pvc and not pvc.get("spec", {}).get("volumeName") and \
                    SELECTED_NODE not in (pvc["metadata"].get("annotations") or {}):
                updated = await self.client.patch("persistentvolumeclaims", claim,
                                                  {"metadata": {"annotations": {SELECTED_NODE: node_name}}}, ns)
                if updated:
                    self.pvcs.upsert(updated)

    async def _fail(self, pod: Obj, message: str) -> None:
        key = key_of(pod)
        first = key not in self.unschedulable
        self.unschedulable.add(key)
        cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message,
                "lastProbeTime": None, "lastTransitionTime": rfc3339()}
        old = next((c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"), None)
        if old is None or old.get("message") != message or old.get("status") != "False":
            if old is not None and old.get("status") == "False":
                cond["lastTransitionTime"] = old.get("lastTransitionTime")
            others = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") != "PodScheduled"]
            try:
                updated = await self.client.patch("pods", name_of(pod), {"status": {"phase": "Pending",
                                                  "conditions": others + [cond]}},
                                                  pod["metadata"].get("namespace"), subresource="status")
                if updated:
                    self.pods.upsert(updated)
            except Exception as exc:
                if api_error_code(exc) != 404:
                    raise
            await self.ctx.event(pod, "FailedScheduling", message, type="Warning", component=COMPONENT)
        elif first:
            await self.ctx.event(pod, "FailedScheduling", message, type="Warning", component=COMPONENT)
        self.enqueue(key, RETRY_SECONDS)


async def bind_pod(client, pod: Obj, node_name: str) -> Obj | None:
    """Bind through the pods/binding subresource when the API has it, else set spec.nodeName directly."""
    ns, name = pod["metadata"].get("namespace", ""), name_of(pod)
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": ns},
               "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}
    try:
        await client.create("pods/binding", binding, ns)
        return None
    except Exception as exc:
        if api_error_code(exc) == 409:  # already bound by someone else: nothing to do
            raise
    # no binding subresource in this API server: the spec update does the same
    updated = await client.patch("pods", name, {"spec": {"nodeName": node_name}}, ns)
    try:
        cond = {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": rfc3339()}
        others = [c for c in (updated.get("status") or {}).get("conditions") or [] if c.get("type") != "PodScheduled"]
        updated = await client.patch("pods", name, {"status": {"conditions": others + [cond]}}, ns,
                                     subresource="status")
    except Exception:
        pass
    return updated
