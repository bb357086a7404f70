"""The Ray actor: one worker process hosting one embedded environment for the whole run.

Made a Ray actor by :mod:`.executor` (``ray.remote(EnvironmentWorker)``) so this module imports no
ray. The cluster is *owned* by the worker process: when the worker is killed, the cluster's daemon
sees its owner gone and stops by itself; a worker that ends normally stops it in :meth:`close`.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any


class EnvironmentWorker:
    def __init__(self, number: int, workers: int, plan: Any, provider: str | None, cluster_name: str, run_id: str,
                 scratch: str) -> None:
        from sregym_core.clusters import get_cluster
        from sregym_core.conductor.session import EnvironmentSession
        from sregym_core.plugins import new_plugin_host

        # a worker is a process of its own: it builds its host from the installed plugins, as the
        # driver did (the same environment, so the same SREGYM_LOAD/DISABLE_PLUGINS)
        host = new_plugin_host()
        self.cluster = get_cluster(host, provider=provider, name=cluster_name, owned=True, exclusive=True)
        self.session = EnvironmentSession(host, self.cluster, plan, index=number - 1, environments=workers,
                                          scratch=Path(scratch), run_id=run_id)
        self._started = False

    async def open(self) -> dict[str, Any]:
        """Bring the environment up; returns this process's pid (so a test can kill it) and what to show."""
        self._started = True
        lines = await self.session.open()
        return {"pid": os.getpid(), "lines": lines}

    async def run(self, item: Any, done: list) -> Any:
        return await self.session.run(item, frozenset(tuple(key) for key in done))

    async def close(self) -> None:
        await self.session.close()
        if self._started:  # the worker process ends right after; its owned cluster would stop anyway
            await asyncio.to_thread(self.cluster.down)
