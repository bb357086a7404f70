"""The event scheduler: injects fault instances at their times or after other instances, and
recovers transient ones (triggers) when their duration ends. Replay re-runs a trigger."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

import structlog

from ..types import FaultInstance

log = structlog.get_logger()
Action = Callable[[FaultInstance], Awaitable[None]]


class FaultScheduler:
    def __init__(self, instances: Sequence[FaultInstance], inject: Action, recover: Action) -> None:
        self.instances = list(instances)
        self._inject, self._recover = inject, recover
        self._injected: list[FaultInstance] = []
        self._ever: list[FaultInstance] = []
        self._events = {i.id: asyncio.Event() for i in self.instances}
        self._tasks: list[asyncio.Task] = []
        self._errors: list[BaseException] = []

    def injected(self) -> list[FaultInstance]:
        """Instances injected and not yet recovered by the scheduler itself."""
        return list(self._injected)

    def ever_injected(self) -> list[FaultInstance]:
        return list(self._ever)

    async def start(self) -> None:
        for instance in self.instances:
            self._tasks.append(asyncio.create_task(self._run(instance), name=f"fault-{instance.id}"))

    async def wait_initial(self) -> None:
        """Wait for every instance due at time 0 with no dependency (the agent starts after them)."""
        initial = [self._events[i.id].wait() for i in self.instances if not i.when.at and not i.when.after]
        if initial:
            await asyncio.gather(*initial)
        for error in self._errors:
            raise error

    async def _run(self, instance: FaultInstance) -> None:
        try:
            if instance.when.after:
                await self._events[instance.when.after].wait()
            if instance.when.at:
                await asyncio.sleep(instance.when.at)
            try:
                await self._inject(instance)
            except asyncio.CancelledError:
                # cut while injecting (Ctrl-C, the attempt ending): the fault's write may be in already while its
                # inject still notes what it changed, so it is recovered with the others (CI of stop 51)
                self._mark_injected(instance)
                raise
            self._mark_injected(instance)
            self._events[instance.id].set()
            if instance.when.duration:
                await asyncio.sleep(instance.when.duration)
                await self._recover(instance)
                self._injected.remove(instance)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            log.warning("fault_schedule_failed", instance=instance.id, error=str(exc))
            self._errors.append(exc)
            self._events[instance.id].set()

    def _mark_injected(self, instance: FaultInstance) -> None:
        self._injected.append(instance)
        self._ever.append(instance)

    async def replay(self, name: str) -> None:
        """Re-inject trigger ``name`` (an instance id) for its duration, then recover it."""
        instance = next((i for i in self.instances if i.id == name), None)
        if instance is None:
            raise KeyError(f"no fault instance {name!r} to replay")
        await self._inject(instance)
        await asyncio.sleep(instance.when.duration or 10.0)
        await self._recover(instance)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
