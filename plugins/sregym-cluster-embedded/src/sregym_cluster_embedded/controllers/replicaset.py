"""ReplicaSet controller: keeps `spec.replicas` pods named `<rs>-<5 chars>` alive and reports availability."""

from __future__ import annotations

import copy

from .base import Controller, Key
from .util import (
    Obj,
    is_controlled_by,
    is_deleting,
    is_pod_active,
    is_pod_available,
    is_pod_ready,
    match_selector,
    name_of,
    now,
    owner_ref,
    parse_time,
    pod_condition,
    random_suffix,
    set_condition,
    uid_of,
)
from .writes import api_error_code, api_error_message, prune_zero, write_status

COMPONENT = "replicaset-controller"
BURST = 50  # pods created per reconcile at most (kube uses slow-start batches; this bounds one pass)


def pod_from_template(template: Obj, owner: Obj, name: str, namespace: str) -> Obj:
    tmeta = template.get("metadata") or {}
    pod_meta: Obj = {
        "name": name,
        "namespace": namespace,
        "labels": dict(tmeta.get("labels") or {}),
        "ownerReferences": [owner_ref(owner)],
    }
    if tmeta.get("annotations"):
        pod_meta["annotations"] = dict(tmeta["annotations"])
    if tmeta.get("finalizers"):
        pod_meta["finalizers"] = list(tmeta["finalizers"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
            "spec": copy.deepcopy(template.get("spec") or {})}


def deletion_rank(pod: Obj) -> tuple:
    """Pods deleted first sort first: unscheduled, pending, not ready, ready briefly, restarted, newest."""
    status = pod.get("status") or {}
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(status.get("phase", "Pending"), 0)
    ready = is_pod_ready(pod)
    ready_since = parse_time((pod_condition(pod, "Ready") or {}).get("lastTransitionTime"))
    restarts = sum(c.get("restartCount", 0) for c in status.get("containerStatuses") or [])
    created = parse_time(pod.get("metadata", {}).get("creationTimestamp"))
    return (
        1 if pod.get("spec", {}).get("nodeName") else 0,
        phase_rank,
        1 if ready else 0,
        -(ready_since.timestamp() if ready_since else 0),
        -restarts,
        -(created.timestamp() if created else 0),
    )


async def adopt_orphans(client, owner: Obj, cache, resource: str) -> None:
    """Take over objects with no controller that the owner's selector matches (as after an orphaning delete)."""
    selector = owner.get("spec", {}).get("selector")
    if not selector:
        return
    ns = owner["metadata"].get("namespace", "")
    for obj in cache.list(ns):
        meta = obj["metadata"]
        if is_deleting(obj) or any(r.get("controller") for r in meta.get("ownerReferences") or []):
            continue
        if resource == "pods" and not is_pod_active(obj):
            continue
        if not match_selector(selector, meta.get("labels"), empty_matches=False):
            continue
        refs = list(meta.get("ownerReferences") or []) + [owner_ref(owner)]
        try:
            cache.upsert(await client.patch(resource, meta["name"], {"metadata": {"ownerReferences": refs}}, ns))
        except Exception as exc:
            if api_error_code(exc) not in (404, 409, 422):
                raise


class ReplicaSetController(Controller):
    name = "replicaset"
    component = COMPONENT
    workers = 5  # kube-controller-manager's --concurrent-replicaset-syncs default
    owner_kind = "ReplicaSet"
    resource = "replicasets.apps"

    def setup(self) -> None:
        self.owners = self.watch(self.resource)
        self.pods = self.watch("pods", lambda _e, pod, old: self._pod_changed(pod, old))

    def _pod_changed(self, pod: Obj, old: Obj | None) -> None:
        self.enqueue_owner(pod, self.owner_kind)
        if old is not None:
            self.enqueue_owner(old, self.owner_kind)

    def owned_pods(self, rs: Obj) -> list[Obj]:
        ns = rs["metadata"].get("namespace", "")
        return [p for p in self.pods.list(ns) if is_controlled_by(p, rs)]

    async def reconcile(self, key: Key) -> None:
        rs = self.owners.get(*key)
        if rs is None or is_deleting(rs):
            return
        ns = key[0]
        await adopt_orphans(self.client, rs, self.pods, "pods")
        pods = self.owned_pods(rs)
        active = [p for p in pods if is_pod_active(p)]
        want = int(rs.get("spec", {}).get("replicas", 1) if rs.get("spec", {}).get("replicas") is not None else 1)
        failure: str | None = None
        diff = len(active) - want
        if diff < 0:
            failure = await self._create(rs, ns, min(-diff, BURST))
        elif diff > 0:
            await self._delete(rs, sorted(active, key=deletion_rank)[:diff])
        await self._update_status(rs, failure)

    async def _create(self, rs: Obj, ns: str, count: int) -> str | None:
        template = rs.get("spec", {}).get("template") or {}
        failure = None
        for _ in range(count):
            pod = pod_from_template(template, rs, f"{name_of(rs)}-{random_suffix()}", ns)
            try:
                created = await self.client.create("pods", pod, ns)
            except Exception as exc:
                if api_error_code(exc) == 409:
                    continue  # name clash with a random suffix; the next pass retries
                failure = api_error_message(exc)
                await self.ctx.event(rs, "FailedCreate", f"Error creating: {failure}", type="Warning",
                                     component=self.component)
                self.enqueue((ns, name_of(rs)), 5.0)
                break
            self.pods.upsert(created)
            await self.ctx.event(rs, "SuccessfulCreate", f"Created pod: {name_of(created)}",
                                 component=self.component)
        return failure

    async def _delete(self, rs: Obj, victims: list[Obj]) -> None:
        for pod in victims:
            try:
                gone = await self.client.delete("pods", name_of(pod), pod["metadata"].get("namespace"))
            except Exception as exc:
                if api_error_code(exc) != 404:
                    await self.ctx.event(rs, "FailedDelete", f"Error deleting: {api_error_message(exc)}",
                                         type="Warning", component=self.component)
                continue
            if isinstance(gone, dict) and gone.get("kind") == "Pod" and is_deleting(gone):
                self.pods.upsert(gone)
            else:
                self.pods.remove(pod)
            await self.ctx.event(rs, "SuccessfulDelete", f"Deleted pod: {name_of(pod)}", component=self.component)

    async def _update_status(self, rs: Obj, failure: str | None) -> None:
        spec = rs.get("spec", {})
        min_ready = int(spec.get("minReadySeconds") or 0)
        at = now()
        active = [p for p in self.owned_pods(rs) if is_pod_active(p)]
        labels_sel = {"matchLabels": (spec.get("template", {}).get("metadata") or {}).get("labels") or {}}
        ready = [p for p in active if is_pod_ready(p)]
        available = [p for p in active if is_pod_available(p, min_ready, at)]
        old = rs.get("status") or {}
        status: Obj = {
            "replicas": len(active),
            "fullyLabeledReplicas": sum(1 for p in active if match_selector(labels_sel, p["metadata"].get("labels"))),
            "readyReplicas": len(ready),
            "availableReplicas": len(available),
            "observedGeneration": rs.get("metadata", {}).get("generation", 1),
        }
        prune_zero(status, "fullyLabeledReplicas", "readyReplicas", "availableReplicas")
        conditions = [c for c in old.get("conditions") or []]
        if failure:
            conditions = set_condition(conditions, "ReplicaFailure", "True", "FailedCreate", failure,
                                       probe_field="lastTransitionTime")
            for c in conditions:
                c.pop("lastUpdateTime", None)
        elif conditions:
            conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
        if conditions:
            status["conditions"] = conditions
        await write_status(self.client, self.resource, rs, status, self.owners)
        if min_ready and len(ready) > len(available):
            self.enqueue((rs["metadata"].get("namespace", ""), name_of(rs)), min_ready / 2 or 1)

    def uid(self, obj: Obj) -> str:
        return uid_of(obj)
