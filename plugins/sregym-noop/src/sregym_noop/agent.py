"""The ``echo`` agent: submits a fixed diagnosis, then declares mitigation done."""

from __future__ import annotations

import time

import httpx

from sregym_core.agents import AgentOutcome, AgentTask


class EchoAgent:
    def __init__(self, message: str = "echo: nothing diagnosed") -> None:
        self.message = message

    async def run(self, task: AgentTask) -> AgentOutcome:
        trajectory = []
        async with httpx.AsyncClient(timeout=10.0, trust_env=False) as client:
            for solution in (self.message, "mitigation done"):
                started = time.time()
                reply = await client.post(f"{task.api_url}/submit", json={"solution": solution})
                trajectory.append({"action": "submit", "solution": solution, "status": reply.status_code,
                                   "observation": reply.text[:500], "timestamp": started})
                if reply.status_code >= 400:
                    return AgentOutcome(status="garbage", steps=len(trajectory), trajectory=tuple(trajectory),
                                        error=f"submit answered {reply.status_code}")
        return AgentOutcome(status="ok", steps=len(trajectory), trajectory=tuple(trajectory))
