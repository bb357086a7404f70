"""External-harness mode: the attempt waits for an agent running outside SREGym.

``sregym run --external-harness`` deploys and injects as usual, serves the agent surface on the
configured ports, and instead of starting an agent waits, through the same public HTTP API any
outside agent uses, until every selected stage was submitted and graded (or the agent time limit
ends). Grading and recording are unchanged.
"""

from __future__ import annotations

import asyncio

import httpx

from ..agents import AgentOutcome, AgentTask
from ..types import AgentSpec

EXTERNAL_AGENT = "external-harness"


class ExternalHarness:
    """Polls ``GET /status`` until the graded stages are over."""

    def __init__(self, poll_s: float = 1.0, **_config) -> None:
        self.poll_s = poll_s

    async def run(self, task: AgentTask) -> AgentOutcome:
        seen: list[dict] = []
        async with httpx.AsyncClient(base_url=task.api_url, timeout=10.0, trust_env=False) as http:
            while True:
                try:
                    stage = (await http.get("/status")).json().get("stage")
                except (httpx.HTTPError, ValueError):
                    stage = None
                if not seen or seen[-1]["stage"] != stage:
                    seen.append({"action": "stage", "stage": stage, "message": f"stage: {stage}"})
                if stage in ("tearing_down", "done"):
                    return AgentOutcome(status="ok", steps=0, trajectory=tuple(seen))
                await asyncio.sleep(self.poll_s)


def external_agent_spec() -> AgentSpec:
    return AgentSpec(name=EXTERNAL_AGENT, summary="waits for an agent outside SREGym (--external-harness)",
                     needs=frozenset({"http-api"}), factory=ExternalHarness)
