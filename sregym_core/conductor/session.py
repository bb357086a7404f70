"""One environment driven item by item from outside this process: the seam for distributed executors.

:func:`.runner.run_plan` runs its environments in one process and records into the results
directory itself. An executor that spreads work items over other processes or machines (a plugin
behind the ``sregym_executors`` hook, say on Ray) hosts one :class:`EnvironmentSession` per worker:
the session brings its own cluster up, runs one :class:`.runner.WorkItem` at a time exactly as
``run_plan`` does (same attempt, same reset, same deploy-failure rule), and hands back an
:class:`ItemOutcome` — the records, their trajectories as text, and what it would have printed —
for the driver to merge into the one results directory. Nothing here knows about the executor.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import attrs

from ..agent_api.server import AgentServer, ServeSettings
from ..clusters import name_of
from ..plugins import PluginHost
from ..results.record import AttemptRecord
from ..results.writer import ResultsDir
from .environment import Environment
from .runner import RunPlan, WorkItem, _run_item, _RunState, resolve_agents, serve_settings_for


@attrs.frozen
class RecordedAttempt:
    """One record as a worker produced it; ``trajectory`` is the trajectory file's text (its path,
    relative to the results directory, is the record's ``trajectory_path``)."""

    record: AttemptRecord
    trajectory: str | None = None


@attrs.frozen
class ItemOutcome:
    """What running one work item produced: usually one record; none when ``--resume`` skipped it;
    and the progress lines the worker would have printed, for the driver to show."""

    attempts: tuple[RecordedAttempt, ...]
    lines: tuple[str, ...] = ()


class EnvironmentSession:
    """A cluster, its environment and its agent surface, running the work items given to it.

    ``scratch`` is a directory of the worker's own: trajectories and per-attempt working files are
    written there first (the driver owns the results directory and copies what it is handed).
    """

    def __init__(self, host: PluginHost, cluster: Any, plan: RunPlan, *, index: int, environments: int,
                 scratch: Path, run_id: str) -> None:
        self.host, self.cluster, self.plan, self.index = host, cluster, plan, index
        self.scratch = Path(scratch)
        # the plan as this worker sees it: attempts' working files under its own scratch directory
        self.local_plan = attrs.evolve(plan, results_dir=self.scratch, resume=False)
        self.run_id = run_id
        self.env = Environment(host=host, cluster=cluster, workdir=self.scratch / ".work" / f"env-{index + 1}",
                               with_observability=plan.observability, standing_agent_access=False)
        self.server = AgentServer(settings=serve_settings_for(plan.serve or ServeSettings.from_env(), index,
                                                              environments))
        self.agents = resolve_agents(host, plan)
        self.pid = os.getpid()

    async def open(self) -> list[str]:
        """Start the agent surface and bring the cluster up; returns the lines to show."""
        await self.server.start()
        lines = [f"agent API: {self.server.api_url} (MCP: {self.server.mcp_url})",
                 f"cluster: bringing up {name_of(self.cluster)}"]
        await self.env.up()
        return lines

    async def run(self, item: WorkItem, done: frozenset = frozenset()) -> ItemOutcome:
        """Run one item (``done``: keys already recorded, for ``--resume``). Nothing is recorded
        here: the records go back to the driver, which hands them to its plugin host."""
        lines: list[str] = []
        state = _RunState(host=self.host, plan=self.local_plan, run_id=self.run_id, agents=self.agents,
                          results=ResultsDir(self.scratch), done=set(done), items=[item], queue=asyncio.Queue(),
                          announce=False)
        state.claimed.add(0)
        await _run_item(state, self.env, self.server, item, lines.append, self.index)
        attempts = []
        for record in state.records:
            text = None
            if record.trajectory_path:
                path = self.scratch / record.trajectory_path
                text = path.read_text() if path.is_file() else None
            attempts.append(RecordedAttempt(record, text))
        return ItemOutcome(tuple(attempts), tuple(lines))

    async def close(self) -> None:
        await self.server.stop()
