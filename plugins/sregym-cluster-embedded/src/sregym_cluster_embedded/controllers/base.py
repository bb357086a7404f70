"""The controller skeleton: a keyed, de-duplicating work queue fed by informer events, and
``workers`` workers that never reconcile the same key at once (kube-controller-manager's
``--concurrent-*-syncs``)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .informer import Informer, key_of
from .util import Obj, controller_of

log = logging.getLogger(__name__)

Key = tuple[str, str]


@dataclass
class Timings:
    """Clock constants; tests shrink them through settings (attribute names below)."""

    node_monitor_grace_seconds: float = 40.0  # settings.node_monitor_grace_period
    default_toleration_seconds: int = 300  # settings.default_toleration_seconds
    node_monitor_period: float = 5.0  # settings.node_monitor_period
    resync_seconds: float = 30.0
    hpa_sync_seconds: float = 15.0  # settings.hpa_sync_period
    cronjob_check_seconds: float = 10.0
    job_backoff_base: float = 10.0  # settings.job_backoff_base
    job_backoff_max: float = 360.0

    @classmethod
    def from_settings(cls, settings: Any) -> Timings:
        t = cls()
        for attr, name in [("node_monitor_grace_seconds", "node_monitor_grace_period"),
                           ("default_toleration_seconds", "default_toleration_seconds"),
                           ("node_monitor_period", "node_monitor_period"),
                           ("hpa_sync_seconds", "hpa_sync_period"),
                           ("job_backoff_base", "job_backoff_base"),
                           ("cronjob_check_seconds", "cronjob_check_period")]:
            value = getattr(settings, name, None)
            if value is not None:
                setattr(t, attr, type(getattr(t, attr))(value))
        return t


@dataclass
class Context:
    """What every controller shares: the client, caches, settings and clock constants."""

    client: Any
    settings: Any
    timings: Timings
    informers: dict[str, Informer] = field(default_factory=dict)
    usage: Callable[[str, str], dict[str, tuple[int, int]]] | None = None  # pod metrics for the HPA

    def informer(self, resource: str) -> Informer:
        inf = self.informers.get(resource)
        if inf is None:
            inf = self.informers[resource] = Informer(self.client, resource,
                                                      resync_seconds=self.timings.resync_seconds)
        return inf

    async def event(self, obj: Obj, reason: str, message: str, *, type: str = "Normal",
                    component: str = "") -> None:
        try:
            await self.client.create_event(obj, reason, message, type=type, component=component)
        except Exception as exc:  # events are best effort, as in Kubernetes
            log.debug("event %s on %s failed: %s", reason, obj.get("metadata", {}).get("name"), exc)


class Controller:
    """Subclasses set `name`, register handlers in `setup()` and implement `reconcile(key)`."""

    name = "controller"
    component = ""
    #: keys reconciled side by side: one slow reconcile (a pod create waiting a minute on admission
    #: webhooks) must not hold up every other owner's
    workers = 1

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.client = ctx.client
        self._due: dict[Key, float] = {}
        self._wake = asyncio.Event()
        self._failures: dict[Key, int] = {}
        self._tasks: list[asyncio.Task] = []
        self._active: set[Key] = set()
        self.setup()

    def setup(self) -> None:  # pragma: no cover - overridden
        pass

    async def reconcile(self, key: Key) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    # ------------------------------------------------------------ queue

    def enqueue(self, key: Key, delay: float = 0.0) -> None:
        due = time.monotonic() + max(0.0, delay)
        current = self._due.get(key)
        if current is None or due < current:
            self._due[key] = due
            self._wake.set()

    def enqueue_obj(self, obj: Obj, delay: float = 0.0) -> None:
        self.enqueue(key_of(obj), delay)

    def enqueue_owner(self, obj: Obj, kind: str) -> None:
        ref = controller_of(obj)
        if ref and ref.get("kind") == kind:
            self.enqueue((key_of(obj)[0], ref.get("name", "")))

    def watch(self, resource: str, handler: Callable[[str, Obj, Obj | None], None] | None = None) -> Informer:
        inf = self.ctx.informer(resource)
        inf.add_handler(handler or (lambda _e, obj, _o: self.enqueue_obj(obj)))
        return inf

    # ------------------------------------------------------------ worker

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._run(), name=f"controller:{self.name}:{i}")
                       for i in range(max(1, self.workers))]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        self._tasks = []

    async def _run(self) -> None:
        for inf in list(self.ctx.informers.values()):
            await inf.synced.wait()
        while True:
            key = self._pop_ready()
            if key is None:
                self._wake.clear()
                # keys another worker holds come back when it finishes (it wakes the others)
                timeout = min((d for k, d in self._due.items() if k not in self._active), default=None)
                try:
                    if timeout is None:
                        await self._wake.wait()
                    else:
                        await asyncio.wait_for(self._wake.wait(), max(0.0, timeout - time.monotonic()))
                except TimeoutError:
                    pass
                continue
            self._active.add(key)
            try:
                await self.reconcile(key)
                self._failures.pop(key, None)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                count = self._failures[key] = self._failures.get(key, 0) + 1
                log.debug("%s: reconcile %s failed (%s): %s", self.name, key, count, exc)
                self.enqueue(key, min(0.05 * 2**count, 10.0))
            finally:
                self._active.discard(key)
                if key in self._due:
                    self._wake.set()
            await asyncio.sleep(0)  # let watches and the API breathe between keys

    def _pop_ready(self) -> Key | None:
        now = time.monotonic()
        for key, due in self._due.items():
            if due <= now and key not in self._active:
                del self._due[key]
                return key
        return None

    async def run_once(self, key: Key) -> None:
        """Reconcile one key now (for tests)."""
        await self.reconcile(key)
