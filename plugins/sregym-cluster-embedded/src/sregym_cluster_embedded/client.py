"""The in-process client controllers and node agents use: the API semantics without HTTP.

Resource names are the plural for core kinds (``"pods"``) and ``"plural.group"`` otherwise
(``"deployments.apps"``). Returned objects are private copies the caller may mutate.
"""

from __future__ import annotations

import builtins
import hashlib
import json
from collections.abc import AsyncIterator
from typing import Any

from .apiserver import webhooks
from .apiserver.core import ApiCore, now_iso, random_suffix
from .apiserver.errors import ApiError
from .apiserver.registry import ResourceType
from .apiserver.selectors import ObjectFilter
from .apiserver.store import clone

__all__ = ["ApiError", "LocalClient"]

PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}


#: who the cluster's own components are in an AdmissionReview
COMPONENT_USER = type("ComponentUser", (), {"name": "system:kube-controller-manager",
                                                         "groups": ("system:authenticated",)})()


class LocalClient:
    """Async CRUD + watch over an :class:`ApiCore`, with the same defaulting, admission and watch
    semantics as the HTTP API (no authorization: callers are trusted cluster components)."""

    def __init__(self, core: ApiCore) -> None:
        self.core = core

    @property
    def settings(self) -> Any:
        return self.core.settings

    def _rt(self, resource: str) -> ResourceType:
        return self.core.registry.by_key(resource)

    async def get(self, resource: str, name: str, namespace: str | None = None) -> dict:
        return clone(self.core.get(self._rt(resource), namespace, name))

    async def list(self, resource: str, namespace: str | None = None, *, label_selector: str | None = None,
                   field_selector: str | None = None) -> list[dict]:
        items, _, _, _ = self.core.list(self._rt(resource), namespace, label_selector=label_selector,
                                        field_selector=field_selector)
        return [clone(o) for o in items]

    # (`list` in this class's annotations below is the method LocalClient.list, hence builtins.list)
    def list_nocopy(self, resource: str, namespace: str | None = None) -> builtins.list[dict]:
        """The stored objects themselves (read-only!): for hot loops that only read."""
        items, _, _, _ = self.core.list(self._rt(resource), namespace)
        return items

    async def create(self, resource: str, obj: dict, namespace: str | None = None) -> dict:
        rt = self._rt(resource)
        if namespace is None and rt.namespaced:
            namespace = (obj.get("metadata") or {}).get("namespace") or "default"
        body = dict(obj)
        body.setdefault("apiVersion", rt.api_version)
        body.setdefault("kind", rt.kind)
        if webhooks.configured(self.core):  # controllers' writes go through admission webhooks too
            body, _ = await webhooks.on_create(self.core, rt, namespace, body, COMPONENT_USER, False)
        return clone(self.core.create(rt, namespace, body))

    async def update(self, resource: str, obj: dict, *, subresource: str | None = None) -> dict:
        rt = self._rt(resource)
        meta = obj.get("metadata") or {}
        body = dict(obj)
        body.setdefault("apiVersion", rt.api_version)
        body.setdefault("kind", rt.kind if subresource != "scale" else "Scale")
        if subresource == "scale":
            body["kind"] = "Scale"
        if subresource is None and webhooks.configured(self.core):
            preview = self.core.update(rt, meta.get("namespace"), meta.get("name", ""), body, dry_run=True)
            mutated, _ = await webhooks.on_write(self.core, rt, meta.get("namespace"), meta.get("name", ""), preview,
                                                 COMPONENT_USER, False)
            body = mutated if mutated is not None else body
        return clone(self.core.update(rt, meta.get("namespace"), meta.get("name", ""), body,
                                      subresource=subresource))

    async def patch(self, resource: str, name: str, patch: dict | builtins.list, namespace: str | None = None,
                    *, patch_type: str = "merge", subresource: str | None = None) -> dict:
        rt = self._rt(resource)
        content_type = PATCH_TYPES.get(patch_type)
        if content_type is None:
            raise ApiError(415, f"unknown patch type {patch_type!r}", "UnsupportedMediaType")
        body = json.dumps(patch).encode()
        if subresource is None and webhooks.configured(self.core):
            existed = self.core.store.get(rt.storage_key, namespace if rt.namespaced else None, name) is not None
            preview = self.core.patch(rt, namespace, name, body, content_type, dry_run=True)
            mutated, _ = await webhooks.on_write(self.core, rt, namespace, name, preview, COMPONENT_USER, False)
            if mutated is not None:
                return clone(webhooks.store_mutated(self.core, rt, namespace, name, mutated, existed=existed))
        return clone(self.core.patch(rt, namespace, name, body, content_type, subresource=subresource))

    async def delete(self, resource: str, name: str, namespace: str | None = None, *,
                     propagation: str = "Background", grace_period: int | None = None) -> dict | None:
        options: dict[str, Any] = {"propagationPolicy": propagation}
        if grace_period is not None:
            options["gracePeriodSeconds"] = grace_period
        try:
            return clone(self.core.delete(self._rt(resource), namespace, name, options))
        except ApiError as exc:
            if exc.code == 404:
                return None
            raise

    async def watch(self, resource: str, namespace: str | None = None, *, label_selector: str | None = None,
                    field_selector: str | None = None,
                    resource_version: str | None = None) -> AsyncIterator[tuple[str, dict]]:
        """Events as ("ADDED"|"MODIFIED"|"DELETED", object). With no resource_version, the current
        objects come first as ADDED. Runs until the caller stops iterating."""
        rt = self._rt(resource)
        flt = ObjectFilter(namespace if rt.namespaced else None, label_selector, field_selector, rt.key)
        store = self.core.store
        since = int(resource_version) if resource_version not in (None, "", "0") else None
        watcher = store.watch(rt.storage_key, flt, since)
        try:
            if since is None:
                # registered and listed in the same tick: no event can fall between the two
                for obj in store.list(rt.storage_key, flt.namespace):
                    if flt(obj):
                        yield "ADDED", clone(self.core.external(rt, obj))
            while True:
                item = await watcher.queue.get()
                if item is None:
                    return
                event_type, obj = item
                yield event_type, clone(self.core.external(rt, obj))
        finally:
            store.unwatch(watcher)

    async def create_event(self, involved: dict, reason: str, message: str, *, type: str = "Normal",
                           component: str = "", host: str = "") -> None:
        """Record a core/v1 Event; a repeat of the same event bumps count and lastTimestamp."""
        meta = involved.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        ref = {
            "kind": involved.get("kind", ""),
            "namespace": meta.get("namespace", ""),
            "name": meta.get("name", ""),
            "uid": meta.get("uid", ""),
            "apiVersion": involved.get("apiVersion", ""),
            "resourceVersion": meta.get("resourceVersion", ""),
        }
        if involved.get("fieldPath"):
            ref["fieldPath"] = involved["fieldPath"]
        ref = {k: v for k, v in ref.items() if v}
        digest = hashlib.sha1(
            json.dumps([ref.get("uid"), ref.get("name"), ref.get("fieldPath"), reason, message, type, component]).encode()
        ).hexdigest()[:16]
        name = f"{meta.get('name', 'event')}.{digest}"
        stamp = now_iso()
        rt = self._rt("events")
        existing = self.core.store.get("events", namespace, name)
        if existing is not None:
            updated = clone(existing)
            updated["count"] = int(existing.get("count") or 1) + 1
            updated["lastTimestamp"] = stamp
            updated["involvedObject"] = ref
            self.core.update(rt, namespace, name, updated)
            return
        event: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "type": type,
            "source": {"component": component, **({"host": host} if host else {})},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "reportingComponent": component,
            "reportingInstance": host,
        }
        try:
            self.core.create(rt, namespace, event)
        except ApiError as exc:
            if exc.code == 404:  # the namespace is gone: nothing to record the event in
                return
            if exc.code == 409:
                event["metadata"]["name"] = f"{name}.{random_suffix()}"
                self.core.create(rt, namespace, event)
                return
            raise


def new_local_cluster(settings: Any = None) -> LocalClient:
    """A bootstrapped in-memory cluster (no HTTP server): handy for controller and node tests."""
    from .settings import ClusterSettings

    core = ApiCore(settings or ClusterSettings())
    core.bootstrap()
    return LocalClient(core)
