"""Garbage collector: dependents follow their owners (Background, Foreground, Orphan propagation).

Keeps a uid index over the resources that commonly carry ownerReferences. An object whose every
owner is gone is deleted; an owner deleted with `foregroundDeletion` waits until its blocking
dependents are gone; an owner deleted with `orphan` has the references to it removed first.
"""

from __future__ import annotations

from .base import Controller, Key
from .informer import Informer
from .util import Obj, is_deleting, name_of, uid_of
from .writes import api_error_code

TRACKED = (
    "pods", "replicasets.apps", "deployments.apps", "statefulsets.apps", "daemonsets.apps",
    "controllerrevisions.apps", "jobs.batch", "cronjobs.batch", "services", "endpointslices.discovery.k8s.io",
    "persistentvolumeclaims", "configmaps", "secrets", "serviceaccounts", "horizontalpodautoscalers.autoscaling",
    "poddisruptionbudgets.policy", "networkpolicies.networking.k8s.io", "ingresses.networking.k8s.io",
)


KIND_RESOURCES = {
    "Pod": "pods", "ReplicaSet": "replicasets.apps", "Deployment": "deployments.apps", "StatefulSet": "statefulsets.apps",
    "DaemonSet": "daemonsets.apps", "ControllerRevision": "controllerrevisions.apps", "Job": "jobs.batch",
    "CronJob": "cronjobs.batch", "Service": "services", "EndpointSlice": "endpointslices.discovery.k8s.io",
    "PersistentVolumeClaim": "persistentvolumeclaims", "ConfigMap": "configmaps", "Secret": "secrets",
    "ServiceAccount": "serviceaccounts", "HorizontalPodAutoscaler": "horizontalpodautoscalers.autoscaling",
    "PodDisruptionBudget": "poddisruptionbudgets.policy", "NetworkPolicy": "networkpolicies.networking.k8s.io",
    "Ingress": "ingresses.networking.k8s.io", "Node": "nodes", "Namespace": "namespaces",
}
CLUSTER_SCOPED = {"nodes", "namespaces"}


class GarbageCollector(Controller):
    name = "gc"
    component = "garbage-collector-controller"

    def setup(self) -> None:
        self.by_uid: dict[str, tuple[str, str, str]] = {}  # uid -> (resource, namespace, name)
        self.dependents: dict[str, set[tuple[str, str, str]]] = {}  # owner uid -> dependents
        self.caches: dict[str, Informer] = {}
        for resource in TRACKED:
            self.caches[resource] = self.watch(resource, self._handler(resource))

    def _handler(self, resource: str):
        def handle(event: str, obj: Obj, old: Obj | None) -> None:
            ref = (resource, obj["metadata"].get("namespace", ""), name_of(obj))
            uid = uid_of(obj)
            if old is not None:
                for owner in old["metadata"].get("ownerReferences") or []:
                    self.dependents.get(owner.get("uid", ""), set()).discard(ref)
            if event == "DELETED":
                self.by_uid.pop(uid, None)
                # its dependents may now be orphans; its own owners may be waiting on it (foreground)
                for dep in list(self.dependents.get(uid, ())):
                    self.enqueue(_key(dep))
                for owner in obj["metadata"].get("ownerReferences") or []:
                    self._enqueue_uid(owner.get("uid", ""))
                return
            self.by_uid[uid] = ref
            for owner in obj["metadata"].get("ownerReferences") or []:
                self.dependents.setdefault(owner.get("uid", ""), set()).add(ref)
            if obj["metadata"].get("ownerReferences"):
                self.enqueue(_key(ref))
            if is_deleting(obj) and set(obj["metadata"].get("finalizers") or []) & {"foregroundDeletion", "orphan"}:
                self.enqueue(_key(ref))
        return handle

    def _enqueue_uid(self, uid: str) -> None:
        ref = self.by_uid.get(uid)
        if ref:
            self.enqueue(_key(ref))

    def lookup(self, ref: tuple[str, str, str]) -> Obj | None:
        resource, ns, name = ref
        return self.caches[resource].get(ns, name)

    async def reconcile(self, key: Key) -> None:
        resource, _, name = key[1].partition("/")
        ns = key[0]
        obj = self.caches[resource].get(ns, name) if resource in self.caches else None
        if obj is None:
            return
        finalizers = obj["metadata"].get("finalizers") or []
        if is_deleting(obj) and "orphan" in finalizers:
            await self._orphan_dependents(obj, resource)
            return
        if is_deleting(obj) and "foregroundDeletion" in finalizers:
            await self._foreground(obj, resource)
            return
        owners = obj["metadata"].get("ownerReferences") or []
        if not owners or is_deleting(obj):
            return
        alive = []
        for owner in owners:
            ref = self.by_uid.get(owner.get("uid", ""))
            current = self.lookup(ref) if ref else None
            if current is not None and uid_of(current) == owner.get("uid"):
                alive.append(current)
        if alive:
            waiting = [o for o in alive if is_deleting(o) and "foregroundDeletion" in (o["metadata"].get("finalizers") or [])]
            if len(waiting) == len(alive):
                await self._delete(resource, obj, "Foreground")
            return
        if self._owner_kinds_known(owners) and not await self._any_owner_live(owners, ns):
            await self._delete(resource, obj, "Background")

    async def _any_owner_live(self, owners: list[Obj], ns: str) -> bool:
        """Ask the API before collecting: an owner created a moment ago may not be in our caches yet."""
        for owner in owners:
            resource = KIND_RESOURCES.get(owner.get("kind", ""))
            if resource is None:
                return True
            try:
                current = await self.client.get(resource, owner.get("name", ""), None if resource in CLUSTER_SCOPED else ns)
            except Exception as exc:
                if api_error_code(exc) == 404:
                    continue
                return True  # cannot tell: keep the dependent
            if current and uid_of(current) == owner.get("uid"):
                return True
        return False

    def _owner_kinds_known(self, owners: list[Obj]) -> bool:
        """Only collect when we would have seen the owner: kinds we do not track might still exist."""
        return all(o.get("kind") in KIND_RESOURCES for o in owners)

    async def _delete(self, resource: str, obj: Obj, propagation: str) -> None:
        try:
            await self.client.delete(resource, name_of(obj), obj["metadata"].get("namespace") or None,
                                     propagation=propagation)
        except Exception as exc:
            if api_error_code(exc) != 404:
                raise

    def _dependents_of(self, obj: Obj) -> list[tuple[tuple[str, str, str], Obj]]:
        out = []
        for ref in list(self.dependents.get(uid_of(obj), ())):
            dep = self.lookup(ref)
            if dep is not None and any(o.get("uid") == uid_of(obj) for o in dep["metadata"].get("ownerReferences") or []):
                out.append((ref, dep))
        return out

    async def _foreground(self, obj: Obj, resource: str) -> None:
        blocking = 0
        for ref, dep in self._dependents_of(obj):
            mine = next(o for o in dep["metadata"].get("ownerReferences") or [] if o.get("uid") == uid_of(obj))
            if mine.get("blockOwnerDeletion"):
                blocking += 1
            if not is_deleting(dep):
                await self._delete(ref[0], dep, "Foreground")
        if blocking == 0:
            await self._drop_finalizer(resource, obj, "foregroundDeletion")

    async def _orphan_dependents(self, obj: Obj, resource: str) -> None:
        for ref, dep in self._dependents_of(obj):
            refs = [o for o in dep["metadata"].get("ownerReferences") or [] if o.get("uid") != uid_of(obj)]
            try:
                await self.client.patch(ref[0], name_of(dep), {"metadata": {"ownerReferences": refs or None}},
                                        dep["metadata"].get("namespace") or None)
            except Exception as exc:
                if api_error_code(exc) != 404:
                    raise
        await self._drop_finalizer(resource, obj, "orphan")

    async def _drop_finalizer(self, resource: str, obj: Obj, finalizer: str) -> None:
        finalizers = [f for f in obj["metadata"].get("finalizers") or [] if f != finalizer]
        try:
            await self.client.patch(resource, name_of(obj), {"metadata": {"finalizers": finalizers or None}},
                                    obj["metadata"].get("namespace") or None)
        except Exception as exc:
            if api_error_code(exc) != 404:
                raise


def _key(ref: tuple[str, str, str]) -> Key:
    resource, ns, name = ref
    return (ns, f"{resource}/{name}")
