"""An in-memory stand-in for LocalClient, for unit tests of controller logic (no HTTP, no store).

It keeps the parts of the contract controllers rely on: resourceVersion, uid, generation bumps on
spec changes, merge/json patches, the status subresource, watches with initial ADDED events,
immediate deletes (GC is the controllers' business), and recorded events.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import uuid
from datetime import UTC, datetime
from typing import Any

import jsonpatch

KINDS = {
    "pods": ("v1", "Pod"), "services": ("v1", "Service"), "endpoints": ("v1", "Endpoints"),
    "namespaces": ("v1", "Namespace"), "nodes": ("v1", "Node"), "configmaps": ("v1", "ConfigMap"),
    "serviceaccounts": ("v1", "ServiceAccount"), "persistentvolumeclaims": ("v1", "PersistentVolumeClaim"),
    "persistentvolumes": ("v1", "PersistentVolume"), "events": ("v1", "Event"), "secrets": ("v1", "Secret"),
    "deployments.apps": ("apps/v1", "Deployment"), "replicasets.apps": ("apps/v1", "ReplicaSet"),
    "statefulsets.apps": ("apps/v1", "StatefulSet"), "daemonsets.apps": ("apps/v1", "DaemonSet"),
    "jobs.batch": ("batch/v1", "Job"), "cronjobs.batch": ("batch/v1", "CronJob"),
    "endpointslices.discovery.k8s.io": ("discovery.k8s.io/v1", "EndpointSlice"),
    "leases.coordination.k8s.io": ("coordination.k8s.io/v1", "Lease"),
    "horizontalpodautoscalers.autoscaling": ("autoscaling/v2", "HorizontalPodAutoscaler"),
    "storageclasses.storage.k8s.io": ("storage.k8s.io/v1", "StorageClass"),
    "volumeattachments.storage.k8s.io": ("storage.k8s.io/v1", "VolumeAttachment"),
    "poddisruptionbudgets.policy": ("policy/v1", "PodDisruptionBudget"),
    "networkpolicies.networking.k8s.io": ("networking.k8s.io/v1", "NetworkPolicy"),
    "priorityclasses.scheduling.k8s.io": ("scheduling.k8s.io/v1", "PriorityClass"),
}
CLUSTER_SCOPED = {"namespaces", "nodes", "persistentvolumes", "storageclasses.storage.k8s.io",
                  "volumeattachments.storage.k8s.io",
                  "priorityclasses.scheduling.k8s.io"}


class FakeApiError(Exception):
    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.status = {"kind": "Status", "status": "Failure", "code": code, "reason": reason, "message": message}


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge(out.get(key), value)
    return out


def _labels_match(selector: str | None, labels: dict) -> bool:
    if not selector:
        return True
    for part in selector.split(","):
        if "!=" in part:
            k, v = part.split("!=", 1)
            if labels.get(k) == v:
                return False
        elif "=" in part:
            k, v = part.split("=", 1)
            if labels.get(k.rstrip("=")) != v.lstrip("="):
                return False
        elif part and part not in labels:
            return False
    return True


class FakeClient:
    def __init__(self) -> None:
        self.store: dict[str, dict[tuple[str, str], dict]] = {}
        self.rv = itertools.count(1)
        self.watchers: list[tuple[str, asyncio.Queue]] = []
        self.events: list[dict] = []
        self.fail_create: dict[str, str] = {}  # resource -> message of a 403 to raise on create
        # when set, deleting a bound pod only marks it terminating, as a kubelet's grace period does;
        # finish_termination() removes it
        self.graceful_pods = False

    def _bucket(self, resource: str) -> dict:
        return self.store.setdefault(resource, {})

    def _emit(self, resource: str, event: str, obj: dict) -> None:
        for res, queue in self.watchers:
            if res == resource:
                queue.put_nowait((event, copy.deepcopy(obj)))

    def _key(self, resource: str, name: str, namespace: str | None) -> tuple[str, str]:
        return ("" if resource in CLUSTER_SCOPED else (namespace or "default"), name)

    async def get(self, resource: str, name: str, namespace: str | None = None) -> dict:
        obj = self._bucket(resource).get(self._key(resource, name, namespace))
        if obj is None:
            raise FakeApiError(404, "NotFound", f'{resource} "{name}" not found')
        return copy.deepcopy(obj)

    async def list(self, resource: str, namespace: str | None = None, *, label_selector: str | None = None,
                   field_selector: str | None = None) -> list[dict]:
        out = []
        for (ns, _), obj in self._bucket(resource).items():
            if namespace and ns != namespace:
                continue
            if not _labels_match(label_selector, obj["metadata"].get("labels") or {}):
                continue
            out.append(copy.deepcopy(obj))
        return out

    async def create(self, resource: str, obj: dict, namespace: str | None = None) -> dict:
        if "/" in resource:
            raise FakeApiError(404, "NotFound", "the server could not find the requested resource")
        if resource in self.fail_create:
            raise FakeApiError(403, "Forbidden", self.fail_create[resource])
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        if resource not in CLUSTER_SCOPED:
            meta["namespace"] = namespace or meta.get("namespace") or "default"
        key = self._key(resource, meta["name"], meta.get("namespace"))
        if key in self._bucket(resource):
            raise FakeApiError(409, "AlreadyExists", f'{resource} "{meta["name"]}" already exists')
        api, kind = KINDS.get(resource, ("v1", resource))
        obj.setdefault("apiVersion", api)
        obj.setdefault("kind", kind)
        meta.update(uid=str(uuid.uuid4()), resourceVersion=str(next(self.rv)), generation=1,
                    creationTimestamp=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        self._bucket(resource)[key] = obj
        self._emit(resource, "ADDED", obj)
        return copy.deepcopy(obj)

    def _store_update(self, resource: str, old: dict, new: dict, subresource: str | None) -> dict:
        if subresource == "status":
            new = dict(old, status=new.get("status"))
        else:
            new = dict(new, status=old.get("status")) if "status" in old else new
            if new.get("spec") != old.get("spec"):
                new["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
        new["metadata"]["resourceVersion"] = str(next(self.rv))
        key = self._key(resource, new["metadata"]["name"], new["metadata"].get("namespace"))
        self._bucket(resource)[key] = new
        self._emit(resource, "MODIFIED", new)
        return copy.deepcopy(new)

    async def update(self, resource: str, obj: dict, *, subresource: str | None = None) -> dict:
        meta = obj["metadata"]
        old = await self.get(resource, meta["name"], meta.get("namespace"))
        if meta.get("resourceVersion") and meta["resourceVersion"] != old["metadata"]["resourceVersion"]:
            raise FakeApiError(409, "Conflict", "the object has been modified")
        return self._store_update(resource, old, copy.deepcopy(obj), subresource)

    async def patch(self, resource: str, name: str, patch: Any, namespace: str | None = None, *,
                    patch_type: str = "merge", subresource: str | None = None) -> dict:
        old = await self.get(resource, name, namespace)
        if patch_type == "json":
            new = jsonpatch.apply_patch(old, patch)
        else:
            new = _merge(old, patch)
        return self._store_update(resource, old, new, subresource)

    async def delete(self, resource: str, name: str, namespace: str | None = None, *,
                     propagation: str = "Background", grace_period: int | None = None) -> dict | None:
        key = self._key(resource, name, namespace)
        current = self._bucket(resource).get(key)
        if (self.graceful_pods and resource == "pods" and current is not None and current["spec"].get("nodeName")
                and not current["metadata"].get("deletionTimestamp")):
            current["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
            current["metadata"]["resourceVersion"] = str(next(self.rv))
            self._emit(resource, "MODIFIED", current)
            return copy.deepcopy(current)
        obj = self._bucket(resource).pop(key, None)
        if obj is None:
            raise FakeApiError(404, "NotFound", f'{resource} "{name}" not found')
        obj["metadata"]["resourceVersion"] = str(next(self.rv))
        self._emit(resource, "DELETED", obj)
        return copy.deepcopy(obj)

    async def watch(self, resource: str, namespace: str | None = None, *, label_selector=None,
                    field_selector=None, resource_version: str | None = None):
        queue: asyncio.Queue = asyncio.Queue()
        if resource_version is None:
            for obj in self._bucket(resource).values():
                queue.put_nowait(("ADDED", copy.deepcopy(obj)))
        entry = (resource, queue)
        self.watchers.append(entry)
        try:
            while True:
                yield await queue.get()
        finally:
            self.watchers.remove(entry)

    async def create_event(self, involved: dict, reason: str, message: str, *, type: str = "Normal",
                           component: str = "") -> None:
        self.events.append({"involved": involved.get("metadata", {}).get("name"), "kind": involved.get("kind"),
                            "reason": reason, "message": message, "type": type, "component": component})

    # -------------------------------------------------------- test conveniences

    def finish_termination(self) -> int:
        """Remove every terminating pod (their grace period is over); how many went."""
        gone = [key for key, p in self._bucket("pods").items() if p["metadata"].get("deletionTimestamp")]
        for key in gone:
            obj = self._bucket("pods").pop(key)
            obj["metadata"]["resourceVersion"] = str(next(self.rv))
            self._emit("pods", "DELETED", obj)
        return len(gone)

    def objects(self, resource: str, namespace: str | None = None) -> list[dict]:
        return [copy.deepcopy(o) for (ns, _), o in self._bucket(resource).items()
                if namespace is None or ns == namespace]

    def reasons(self) -> list[str]:
        return [e["reason"] for e in self.events]

    async def mark_pods(self, namespace: str = "default", *, ready: bool = True, node: str | None = "node-1",
                        transition: str | None = None) -> None:
        """Play kubelet: every pod Running (and Ready) with an IP."""
        stamp = transition or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        for i, pod in enumerate(self.objects("pods", namespace)):
            status = pod.get("status") or {}
            if status.get("phase") == "Running" and any(
                    c["type"] == "Ready" and c["status"] == ("True" if ready else "False")
                    for c in status.get("conditions") or []):
                continue
            status = {"phase": "Running", "podIP": status.get("podIP") or f"127.42.0.{10 + i}",
                      "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                      "lastTransitionTime": stamp}]}
            spec_patch = {"spec": {"nodeName": node}} if node and not pod["spec"].get("nodeName") else None
            if spec_patch:
                await self.patch("pods", pod["metadata"]["name"], spec_patch, namespace)
            await self.patch("pods", pod["metadata"]["name"], {"status": status}, namespace, subresource="status")


#: how long settle waits by default: an outer bound that only catches a hang (controllers on a loaded machine,
#: two test workers and a cluster on 2 cores, may take seconds for what takes milliseconds alone)
HANG_S = 30.0


async def settle(predicate, timeout: float = HANG_S, step: float = 0.02) -> None:
    """Wait until predicate() is true (controllers run as tasks), failing after `timeout`."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        result = predicate()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return
        if loop.time() > end:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(step)


import pytest  # noqa: E402


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class FakeKubelet:
    """Plays the node agents for controller tests on a real LocalClient: registers nodes, marks bound pods
    Running+Ready with an IP (or per-pod phase overrides), and finishes graceful deletions."""

    def __init__(self, client, nodes=("node-1",), *, cpu="4", memory="8Gi", ip_prefix="127.42") -> None:
        self.client = client
        self.ip_prefix = ip_prefix
        self.nodes = nodes
        self.cpu, self.memory = cpu, memory
        self.phase: dict[str, str] = {}  # pod name prefix -> phase to report (e.g. "Succeeded")
        self.unready: set[str] = set()
        self.unready_images: set[str] = set()  # a pod running one of these images never gets ready
        self._task = None
        self._ips = itertools.count(10)

    async def start(self) -> None:
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        for name in self.nodes:
            await self.client.create("nodes", {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                                               "spec": {}})
            await self.client.patch("nodes", name, {"status": {
                "allocatable": {"cpu": self.cpu, "memory": self.memory, "pods": "110"},
                "capacity": {"cpu": self.cpu, "memory": self.memory, "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}]}}, subresource="status")
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass

    def _wanted_phase(self, name: str) -> str:
        for prefix, phase in self.phase.items():
            if name.startswith(prefix):
                return phase
        return "Running"

    async def _loop(self) -> None:
        while True:
            for pod in await self.client.list("pods"):
                meta, spec = pod["metadata"], pod["spec"]
                if not spec.get("nodeName"):
                    continue
                if meta.get("deletionTimestamp"):
                    await self.client.delete("pods", meta["name"], meta["namespace"], grace_period=0)
                    continue
                status = pod.get("status") or {}
                phase = self._wanted_phase(meta["name"])
                bad_image = any(c.get("image") in self.unready_images for c in spec.get("containers") or [])
                ready = "True" if phase == "Running" and meta["name"] not in self.unready and not bad_image else "False"
                have = next((c["status"] for c in status.get("conditions") or [] if c["type"] == "Ready"), None)
                if status.get("phase") == phase and have == ready:
                    continue
                stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                conds = [c for c in status.get("conditions") or [] if c["type"] not in ("Ready", "ContainersReady")]
                conds += [{"type": "Ready", "status": ready, "lastTransitionTime": stamp},
                          {"type": "ContainersReady", "status": ready, "lastTransitionTime": stamp}]
                new = {"phase": phase, "podIP": status.get("podIP") or f"{self.ip_prefix}.0.{next(self._ips)}",
                       "hostIP": "127.0.0.1", "startTime": status.get("startTime") or stamp, "conditions": conds}
                try:
                    await self.client.patch("pods", meta["name"], {"status": new}, meta["namespace"], subresource="status")
                except Exception:
                    pass
            await asyncio.sleep(0.05)
