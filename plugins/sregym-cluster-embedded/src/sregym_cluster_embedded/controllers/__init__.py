"""Controllers of the embedded cluster: workload controllers, scheduler, node lifecycle, GC.

`start_controllers(client, settings)` starts every controller as asyncio tasks driven by LocalClient
watches and returns a `ControllerSet` (call `await stop()`). The service proxy and DNS live in
`sregym_cluster_embedded.network` and are started separately by the daemon (`start_network`).
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable, Iterable
from typing import Any

from .base import Context, Controller, Timings

# module:class, in start order (the names are also what `only=` selects)
REGISTRY: dict[str, str] = {
    "namespace": "namespace:NamespaceController",
    "deployment": "deployment:DeploymentController",
    "replicaset": "replicaset:ReplicaSetController",
    "statefulset": "statefulset:StatefulSetController",
    "daemonset": "daemonset:DaemonSetController",
    "job": "job:JobController",
    "cronjob": "cronjob:CronJobController",
    "endpoints": "endpoints:EndpointsController",
    "endpointslice": "endpoints:EndpointSliceController",
    "gc": "gc:GarbageCollector",
    "hpa": "hpa:HorizontalPodAutoscalerController",
    "pvc": "pvc:PersistentVolumeController",
    "attachdetach": "attachdetach:AttachDetachController",
    "pdb": "pdb:DisruptionController",
    "ingresstls": "ingresstls:IngressTlsAccessController",
    "scheduler": "scheduler:Scheduler",
    "nodelifecycle": "nodelifecycle:NodeLifecycleController",
}


class ControllerSet:
    def __init__(self, ctx: Context, controllers: list[Controller]) -> None:
        self.ctx = ctx
        self.controllers = {c.name: c for c in controllers}

    def __getitem__(self, name: str) -> Controller:
        return self.controllers[name]

    def set_metrics(self, usage: Callable[[str, str], dict[str, tuple[int, int]]]) -> None:
        """Give the HPA a pod-usage source (the node runtime's `pod_usage`)."""
        self.ctx.usage = usage

    async def wait_synced(self, timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout):
            for inf in self.ctx.informers.values():
                await inf.synced.wait()

    def __await__(self):
        async def _self() -> ControllerSet:
            return self
        return _self().__await__()

    async def stop(self) -> None:
        for controller in self.controllers.values():
            await controller.stop()
        for inf in self.ctx.informers.values():
            await inf.stop()


def _load(spec: str) -> type[Controller]:
    module, cls = spec.split(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)


def start_controllers(client: Any, settings: Any, *, only: Iterable[str] | None = None,
                      timings: Timings | None = None) -> ControllerSet:
    """Start the controllers (all, or the `only` names of REGISTRY) against a LocalClient.

    `timings` overrides the clock constants (tests use short ones). Call it inside the running event loop. The result may also be awaited (`await start_controllers(...)`),
    which just returns it, so callers may treat this as sync or async.
    """
    ctx = Context(client=client, settings=settings, timings=timings or Timings.from_settings(settings),
                  usage=getattr(settings, "pod_usage", None))
    names = list(REGISTRY) if only is None else list(only)
    controllers = [_load(REGISTRY[name])(ctx) for name in names]
    for inf in list(ctx.informers.values()):
        inf.start()
    for controller in controllers:
        controller.start()
    return ControllerSet(ctx, controllers)


__all__ = ["ControllerSet", "Timings", "start_controllers", "REGISTRY"]
