"""A fake conductor state around the real agent surface: the code the conformance tests drive.

The server, the stage desk and the HTTP/MCP transports are the real ones; only grading is held by
events so a test can look at the protocol while a stage is being graded.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import Any

from sregym_core.agent_api.server import AgentServer, ServeSettings
from sregym_core.agent_api.stages import StageDesk


class HeldGrader:
    """A grader that waits until released; records what it graded."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.graded: list[str] = []
        self.fail: Exception | None = None

    async def __call__(self, solution: str) -> Any:
        await self.release.wait()
        if self.fail:
            raise self.fail
        self.graded.append(solution)
        return {"passed": True}


class FakeAttempt:
    """An attempt as the API sees it: a stage desk and the app's description."""

    def __init__(self, stages=("diagnosis", "mitigation"), busy_wait_s: float = 60.0) -> None:
        self.judge, self.oracle = HeldGrader(), HeldGrader()
        self.desk = StageDesk({"diagnosis": self.judge, "mitigation": self.oracle}, stages=stages,
                              busy_wait_s=busy_wait_s, busy_poll_s=0.05)

    @property
    def stage(self) -> str:
        return self.desk.stage

    async def submit(self, solution: str):
        return await self.desk.submit(solution)

    def app_info(self) -> dict[str, Any]:
        return {"app_name": "hotel-reservation", "namespace": "hotel-reservation",
                "namespaces": ["hotel-reservation"], "descriptions": "A hotel booking app."}


class RecordingKubectl:
    """Stands in for one session's kubectl tool: says which session it belongs to."""

    made: list[str] = []

    def __init__(self, session: str) -> None:
        self.session = session
        self.commands: list[str] = []
        RecordingKubectl.made.append(session)

    async def execute(self, cmd: str) -> str:
        self.commands.append(cmd)
        return f"session={self.session} ran={cmd} history={len(self.commands)}"

    async def rollback(self) -> str:
        return f"session={self.session} rollback"

    def previous_rollbackable(self) -> str:
        return "\n".join(f"{i}. {c}" for i, c in enumerate(self.commands, 1)) or "none"


def loopback() -> ServeSettings:
    return ServeSettings(bind_host="127.0.0.1", api_port=0, mcp_port=0, strict=True)


@asynccontextmanager
async def serving(tools=None, endpoints=None, settings: ServeSettings | None = None):
    server = AgentServer(tools=tools, endpoints=endpoints, settings=settings or loopback())
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
