"""The fault scheduler: an injection cut half-way still counts for recovery."""

from __future__ import annotations

import asyncio

from sregym_core.conductor.schedule import FaultScheduler
from sregym_core.types import FaultInstance


def test_an_injection_cut_half_way_is_recovered_with_the_others():
    written: list[str] = []

    async def inject(instance: FaultInstance) -> None:
        written.append(instance.id)  # the fault's write is in ...
        await asyncio.sleep(60)  # ... while its inject still notes what it changed

    async def recover(_instance: FaultInstance) -> None:
        raise AssertionError("not a transient fault")

    async def scenario() -> list[str]:
        scheduler = FaultScheduler([FaultInstance(id="f", fault="scale-zero", target="rate")], inject, recover)
        await scheduler.start()
        while not written:
            await asyncio.sleep(0.01)
        await scheduler.stop()  # what Ctrl-C does to the attempt
        return [i.id for i in scheduler.injected()]

    assert asyncio.run(scenario()) == ["f"]


def test_an_injection_that_never_started_is_not_recovered():
    async def inject(_instance: FaultInstance) -> None:
        raise AssertionError("not due yet")

    async def scenario() -> list[str]:
        scheduler = FaultScheduler([FaultInstance(id="f", fault="scale-zero", target="rate", when={"at": 60})],
                                   inject, inject)
        await scheduler.start()
        await asyncio.sleep(0.05)
        await scheduler.stop()
        return [i.id for i in scheduler.injected()]

    assert asyncio.run(scenario()) == []
