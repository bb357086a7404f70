"""External-harness mode: the attempt waits for an agent running outside SREGym.

``sregym run --external-harness`` deploys and injects as usual, serves the agent surface on the
configured ports, and instead of starting an agent waits, through the same public HTTP API any
outside agent uses, until every selected stage was submitted and graded (or the agent time limit
ends). Grading and recording are unchanged.

An upstream driver polls ``GET /status`` until it reads ``done`` (and an autosubmit loop submits
until it is told ``done``); it must not meet a closed port instead. After an attempt of the
outside agent, :class:`DoneNotice` stands in for it on the agent surface and answers ``done``;
before the run stops the surface, :func:`hold_until_told` waits until the harness has been told
so, at most :data:`DONE_GRACE_S` after the attempt ended.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from ..agents import AgentOutcome, AgentTask
from ..types import AgentSpec
from .stages import ALL_DONE, WAITER_HEADER

EXTERNAL_AGENT = "external-harness"

#: How long after its last attempt the surface keeps answering ``done`` for a harness that has not
#: read it yet (upstream's drivers poll every few seconds).
DONE_GRACE_S = 30.0


class ExternalHarness:
    """Polls ``GET /status`` until the graded stages are over; each stage it sees is a step of the
    trajectory, stamped when it was seen."""

    def __init__(self, poll_s: float = 1.0, **_config) -> None:
        self.poll_s = poll_s

    async def run(self, task: AgentTask) -> AgentOutcome:
        seen: list[dict] = []
        # marked as the conductor's waiter: its reads must not count as the agent having seen a stage
        async with httpx.AsyncClient(base_url=task.api_url, timeout=10.0, trust_env=False,
                                     headers={WAITER_HEADER: "external-harness"}) as http:
            while True:
                try:
                    stage = (await http.get("/status")).json().get("stage")
                except (httpx.HTTPError, ValueError):
                    stage = None
                if not seen or seen[-1]["stage"] != stage:
                    seen.append({"action": "stage", "stage": stage, "message": f"stage: {stage}",
                                 "timestamp": round(time.time(), 3)})
                if stage in ("tearing_down", "done"):
                    return AgentOutcome(status="ok", steps=0, trajectory=tuple(seen))
                await asyncio.sleep(self.poll_s)


class DoneNotice:
    """A finished attempt as the agent surface shows it to the outside harness: stage ``done``,
    every submission answered ``done`` (upstream's 200), the app as before; and whether the harness
    has been told (:attr:`told`)."""

    def __init__(self, attempt: Any) -> None:
        self._attempt = attempt
        self.ended = time.monotonic()
        self.told = asyncio.Event()

    @property
    def stage(self) -> str:
        return "done"

    def report_stage(self) -> str:
        """``GET /status``: the harness is told ``done``."""
        self.told.set()
        return "done"

    async def submit(self, solution: str) -> tuple[int, dict[str, Any]]:
        self.told.set()
        return 200, dict(ALL_DONE)

    def app_info(self) -> dict[str, Any]:
        return self._attempt.app_info()


def announce_done(server: Any, attempt: Any) -> DoneNotice:
    """After an attempt of the outside agent: the surface answers ``done`` for it until the next
    attempt attaches (or the run stops it)."""
    notice = DoneNotice(attempt)
    server.surface.sink = notice
    return notice


async def hold_until_told(server: Any, grace_s: float = DONE_GRACE_S) -> bool:
    """Before the run stops ``server``: wait until the outside harness has read ``done``, at most
    ``grace_s`` after its last attempt ended. Returns whether it was told (True when there was no
    finished outside attempt to tell about)."""
    notice = getattr(server.surface, "sink", None)
    if not isinstance(notice, DoneNotice):
        return True
    remaining = notice.ended + grace_s - time.monotonic()
    if notice.told.is_set() or remaining <= 0:
        return notice.told.is_set()
    try:
        await asyncio.wait_for(notice.told.wait(), timeout=remaining)
    except TimeoutError:
        return False
    return True


def external_agent_spec() -> AgentSpec:
    return AgentSpec(name=EXTERNAL_AGENT, summary="waits for an agent outside SREGym (--external-harness)",
                     needs=frozenset({"http-api"}), factory=ExternalHarness)
