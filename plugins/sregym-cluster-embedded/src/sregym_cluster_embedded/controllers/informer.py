"""A shared, write-through cache of one resource kept current by a LocalClient watch.

Controllers read from these caches (cheap, synchronous) and write through the client. After a write
a controller puts the returned object back into the cache, so the next reconcile does not act on a
stale view before the watch event arrives (the role "expectations" play in kube-controller-manager).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from .util import Obj, match_selector, name_of, ns_of

log = logging.getLogger(__name__)

Handler = Callable[[str, Obj, "Obj | None"], None]  # (event type, object, previous object)


def _rv(obj: Obj) -> int:
    try:
        return int(obj.get("metadata", {}).get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def key_of(obj: Obj) -> tuple[str, str]:
    return (ns_of(obj) or "", name_of(obj))


class Informer:
    def __init__(self, client: Any, resource: str, *, resync_seconds: float = 30.0) -> None:
        self.client = client
        self.resource = resource
        self.resync_seconds = resync_seconds
        self.objects: dict[tuple[str, str], Obj] = {}
        self.handlers: list[Handler] = []
        self.synced = asyncio.Event()
        self._task: asyncio.Task | None = None

    def add_handler(self, handler: Handler) -> None:
        self.handlers.append(handler)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"informer:{self.resource}")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None

    # ------------------------------------------------------------ reads

    def get(self, namespace: str | None, name: str) -> Obj | None:
        return self.objects.get((namespace or "", name))

    def list(self, namespace: str | None = None, selector: Obj | None = None) -> list[Obj]:
        out = []
        for (ns, _), obj in self.objects.items():
            if namespace is not None and ns != namespace:
                continue
            if selector is not None and not match_selector(selector, obj.get("metadata", {}).get("labels"),
                                                           empty_matches=True):
                continue
            out.append(obj)
        return out

    # ------------------------------------------------------------ writes (from watch or from our own calls)

    def upsert(self, obj: Obj) -> None:
        key = key_of(obj)
        old = self.objects.get(key)
        if old is not None and _rv(obj) and _rv(obj) < _rv(old):
            return  # a late event for something we already saw newer
        self.objects[key] = obj
        self._notify("ADDED" if old is None else "MODIFIED", obj, old)

    def remove(self, obj: Obj) -> None:
        old = self.objects.pop(key_of(obj), None)
        if old is not None:
            self._notify("DELETED", obj, old)

    def _notify(self, event: str, obj: Obj, old: Obj | None) -> None:
        for handler in self.handlers:
            try:
                handler(event, obj, old)
            except Exception:  # one broken handler must not stop the cache
                log.exception("handler for %s failed", self.resource)

    # ------------------------------------------------------------ the watch loop

    async def _run(self) -> None:
        delay = 0.2
        while True:
            try:
                await self._list_and_watch()
                delay = 0.2
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the API may be restarting; relist after a pause
                log.debug("informer %s: %s", self.resource, exc)
                # an unknown resource type must not hold every controller back: count it as synced (empty)
                self.synced.set()
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def _list_and_watch(self) -> None:
        items = await self.client.list(self.resource)
        fresh = {key_of(o): o for o in items}
        for key in list(self.objects):
            if key not in fresh:
                self.remove(self.objects[key])
        for obj in items:
            old = self.objects.get(key_of(obj))
            if old is None or _rv(old) != _rv(obj):
                self.upsert(obj)
        self.synced.set()
        since = max((_rv(o) for o in items), default=0)
        stream = self.client.watch(self.resource, resource_version=str(since) if since else None)
        try:
            async with asyncio.timeout(self.resync_seconds):
                async for event, obj in stream:
                    if event == "DELETED":
                        self.remove(obj)
                    elif event in ("ADDED", "MODIFIED"):
                        self.upsert(obj)
        except TimeoutError:
            pass  # periodic relist heals anything a watch gap lost
        finally:
            closer = getattr(stream, "aclose", None)
            if closer:
                try:
                    await closer()
                except Exception:
                    pass
