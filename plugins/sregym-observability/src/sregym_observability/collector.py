"""Tail every container's logs through the Kubernetes API into a :class:`LogStore`.

Pods are listed and watched through the API; each running (or finished) container gets a task
reading ``pods/log?follow=true&timestamps=true``. After a reconnect or a container restart the tail
resumes with ``sinceTime`` and drops entries it already stored, so nothing is duplicated.
"""

from __future__ import annotations

import asyncio
import contextlib
import re

import aiohttp
import structlog

from .kubeapi import KubeApiError, KubeClient
from .logstore import LogStore
from .timeparse import format_rfc3339_ns, parse_rfc3339_ns

log = structlog.get_logger()

_LABEL_CHARS = re.compile(r"[^A-Za-z0-9_]")
# Labels that only add cardinality without helping anyone find a fault.
_SKIPPED_POD_LABELS = {"pod-template-hash", "controller-revision-hash", "pod-template-generation"}


def sanitize_label(name: str) -> str:
    clean = _LABEL_CHARS.sub("_", name)
    return "_" + clean if clean[:1].isdigit() else clean


def stream_labels(pod: dict, container: str) -> dict[str, str]:
    """Loki stream labels for one container: namespace, pod, container, node, app and pod labels."""
    meta = pod.get("metadata", {})
    pod_labels = meta.get("labels") or {}
    labels = {sanitize_label(k): str(v) for k, v in pod_labels.items() if k not in _SKIPPED_POD_LABELS}
    app = pod_labels.get("app") or pod_labels.get("app.kubernetes.io/name") or pod_labels.get("k8s-app")
    if app:
        labels["app"] = app
    labels.update({
        "namespace": meta.get("namespace", ""),
        "pod": meta.get("name", ""),
        "container": container,
        "node": (pod.get("spec") or {}).get("nodeName") or "",
        "job": f"{meta.get('namespace', '')}/{app or container}",
    })
    return {k: v for k, v in labels.items() if v != ""}


def split_timestamp(line: str) -> tuple[int, str] | None:
    """``"2024-01-02T03:04:05.123456789Z text"`` → (ns, "text"), or None when there is no timestamp."""
    stamp, _, text = line.partition(" ")
    try:
        return parse_rfc3339_ns(stamp), text.rstrip("\r")
    except ValueError:
        return None


def _container_statuses(pod: dict) -> list[dict]:
    status = pod.get("status") or {}
    return list(status.get("initContainerStatuses") or []) + list(status.get("containerStatuses") or [])


class LogCollector:
    """Keeps one tail task per container of every pod in ``namespaces`` (all when empty)."""

    def __init__(self, kube: KubeClient, store: LogStore, *, namespaces: tuple[str, ...] = (),
                 exclude_namespaces: tuple[str, ...] = (), resync_s: float = 10.0, max_tails: int = 1000) -> None:
        self.kube = kube
        self.store = store
        self.namespaces = namespaces
        # Hidden namespaces (the workload generator, the benchmark itself) never reach the agents' logs.
        self.exclude_namespaces = frozenset(exclude_namespaces)
        self.resync_s = resync_s
        self.max_tails = max_tails
        self._pods: dict[tuple[str, str], dict] = {}
        self._tails: dict[tuple[str, str, str], asyncio.Task[None]] = {}
        # Last stored timestamp and container id per container, so resumed tails skip old lines.
        self._last_ts: dict[tuple[str, str, str], int] = {}
        self._done_ids: dict[tuple[str, str, str], str] = {}
        self.errors = 0

    async def run(self) -> None:
        resync = asyncio.create_task(self._resync_loop())
        try:
            while True:
                try:
                    await self._list_and_watch()
                except (TimeoutError, KubeApiError, aiohttp.ClientError, OSError, ValueError) as err:
                    self.errors += 1
                    log.warning("pod_watch_failed", error=str(err))
                await asyncio.sleep(1.0)
        finally:
            resync.cancel()
            for task in list(self._tails.values()):
                task.cancel()
            await asyncio.gather(resync, *self._tails.values(), return_exceptions=True)

    def _pods_path(self) -> list[str]:
        if not self.namespaces:
            return ["/api/v1/pods"]
        return [f"/api/v1/namespaces/{ns}/pods" for ns in self.namespaces]

    async def _list_and_watch(self) -> None:
        paths = self._pods_path()
        if len(paths) > 1:
            await asyncio.gather(*(self._watch_one(p) for p in paths))
        else:
            await self._watch_one(paths[0])

    async def _watch_one(self, path: str) -> None:
        listing = await self.kube.get_json(path)
        seen = set()
        for pod in listing.get("items") or []:
            seen.add(self._remember(pod))
        prefix = None if path == "/api/v1/pods" else path.split("/")[4]
        for key in [k for k in self._pods if (prefix is None or k[0] == prefix) and k not in seen]:
            self._forget(key)
        version = (listing.get("metadata") or {}).get("resourceVersion", "")
        async for event in self.kube.watch(path, version):
            kind, pod = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                return  # e.g. 410 Gone: relist
            if kind == "BOOKMARK":
                continue
            if kind == "DELETED":
                meta = pod.get("metadata", {})
                self._forget((meta.get("namespace", ""), meta.get("name", "")))
            else:
                self._remember(pod)

    def _remember(self, pod: dict) -> tuple[str, str]:
        meta = pod.get("metadata", {})
        key = (meta.get("namespace", ""), meta.get("name", ""))
        if key[0] in self.exclude_namespaces:
            return key
        self._pods[key] = pod
        self._reconcile(pod)
        return key

    def _forget(self, key: tuple[str, str]) -> None:
        self._pods.pop(key, None)
        for tail_key in [k for k in self._tails if k[:2] == key]:
            self._tails.pop(tail_key).cancel()
        for table in (self._last_ts, self._done_ids):
            for k in [k for k in table if k[:2] == key]:
                del table[k]

    async def _resync_loop(self) -> None:
        while True:
            await asyncio.sleep(self.resync_s)
            for pod in list(self._pods.values()):
                self._reconcile(pod)

    def _reconcile(self, pod: dict) -> None:
        meta = pod.get("metadata", {})
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        for status in _container_statuses(pod):
            container = status.get("name", "")
            key = (ns, name, container)
            task = self._tails.get(key)
            if task is not None and not task.done():
                continue
            state = status.get("state") or {}
            container_id = status.get("containerID") or f"restart-{status.get('restartCount', 0)}"
            if "running" not in state and "terminated" not in state:
                continue
            if "running" not in state and self._done_ids.get(key) == container_id:
                continue  # this instance's output was read to the end already
            if len(self._tails) >= self.max_tails:
                log.warning("log_tail_limit_reached", limit=self.max_tails)
                return
            self._tails[key] = asyncio.create_task(self._tail(pod, container, container_id, "running" in state))

    async def _tail(self, pod: dict, container: str, container_id: str, running: bool) -> None:
        meta = pod.get("metadata", {})
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        key = (ns, name, container)
        labels = stream_labels(pod, container)
        params = {"container": container, "follow": "true", "timestamps": "true"}
        last = self._last_ts.get(key)
        if last is not None:
            params["sinceTime"] = format_rfc3339_ns(last).split(".")[0] + "Z"
        try:
            chunks = self.kube.stream_line_batches(f"/api/v1/namespaces/{ns}/pods/{name}/log", params)
            async for lines in chunks:
                batch: list[tuple[int, str]] = []
                for line in lines:
                    parsed = split_timestamp(line)
                    if parsed is None or (last is not None and parsed[0] <= last):
                        continue
                    batch.append(parsed)
                    last = parsed[0]
                if batch:
                    self._flush(key, labels, batch)
            if not running:
                self._done_ids[key] = container_id
        except (TimeoutError, KubeApiError, aiohttp.ClientError, OSError) as err:
            # A container that has not started yet, or a pod that just went away; the next resync retries.
            log.debug("log_tail_ended", namespace=ns, pod=name, container=container, error=str(err))
        finally:
            if self._tails.get(key) is asyncio.current_task():
                del self._tails[key]

    def _flush(self, key: tuple[str, str, str], labels: dict[str, str], batch: list[tuple[int, str]]) -> None:
        self.store.append(labels, batch)
        self._last_ts[key] = batch[-1][0]


async def run_collector(kube: KubeClient, store: LogStore, namespaces: tuple[str, ...] = (),
                        exclude_namespaces: tuple[str, ...] = ()) -> None:
    collector = LogCollector(kube, store, namespaces=namespaces, exclude_namespaces=exclude_namespaces)
    with contextlib.suppress(asyncio.CancelledError):
        await collector.run()
