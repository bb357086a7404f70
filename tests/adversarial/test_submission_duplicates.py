"""Issue 34 attack 8 (report of 2026-11-29): under load, an MCP copy of the diagnosis that arrived
4.3 s after the diagnosis' grading ended was taken as the mitigation submission and ended the
attempt. The duplicate guard counted the conductor's own ``GET /status`` poller (external-harness
mode) as the agent having read the new stage, the one case where the same text is taken again.

Real agent surface (HTTP and MCP on 127.0.0.1), real stage desk, the conductor's real waiter
polling; the graders are stand-ins that record what they were asked to grade. And the RL text env's
own submit path on the same desk."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx

from sregym_core.agent_api.external import ExternalHarness
from sregym_core.agent_api.server import AgentServer
from sregym_core.agent_api.stages import StageDesk
from sregym_core.agents import AgentTask

ANSWER = "the geo Deployment runs an image tag that does not exist"
GRADING_S = 0.3


def _desk(graded: list) -> StageDesk:
    async def judge(text):
        await asyncio.sleep(GRADING_S)
        graded.append(("diagnosis", text))
        return "judged"

    async def oracle(text):
        graded.append(("mitigation", text))
        return "oracle"

    desk = StageDesk({"diagnosis": judge, "mitigation": oracle}, busy_poll_s=0.01)
    desk.open()
    return desk


class _Sink:
    """The attempt as the agent surface sees it (the conductor's Attempt forwards the same calls)."""

    def __init__(self, desk: StageDesk) -> None:
        self.desk = desk

    @property
    def stage(self) -> str:
        return self.desk.stage

    async def submit(self, solution):
        return await self.desk.submit(solution)

    def report_stage(self):
        return self.desk.report_stage()

    def app_info(self):
        return {"app_name": "x"}


def _mcp_text(result) -> str:
    return result.content[0].text


def test_an_mcp_copy_after_grading_is_a_duplicate_while_the_conductor_polls_status(tmp_path: Path):
    """HTTP diagnosis, graded; the external-harness waiter keeps polling ``/status`` (it reads
    ``mitigation``); then the MCP copy: a duplicate, the stage stays, and the real fix is graded."""
    graded: list = []

    async def main():
        desk = _desk(graded)
        async with AgentServer(_Sink(desk), None) as server:
            task = AgentTask(attempt_id="a", app_name="x", app_namespace="x", app_description="",
                             api_url=server.api_url, kubeconfig=tmp_path / "kc", workdir=tmp_path)
            waiter = asyncio.create_task(ExternalHarness(poll_s=0.02).run(task))
            from mcp import Client

            async with httpx.AsyncClient(base_url=server.api_url, trust_env=False) as http, \
                    Client(server.mcp_url) as client:
                first = await http.post("/submit", json={"solution": ANSWER})
                await desk.wait_graded()
                ended = time.monotonic()
                await asyncio.sleep(0.3)  # the waiter has read the new stage many times
                copy = _mcp_text(await client.call_tool("submit", {"ans": ANSWER}))
                copy_after = time.monotonic() - ended
                stage_after_copy = desk.stage
                fix = _mcp_text(await client.call_tool("submit", {"ans": "rolled geo back to its previous image"}))
                await desk.wait_graded()
            outcome = await asyncio.wait_for(waiter, 30)
        return first.json(), copy, copy_after, stage_after_copy, fix, outcome

    first, copy, copy_after, stage_after_copy, fix, outcome = asyncio.run(main())
    assert first["status"] == "200"
    assert copy_after > 0.3  # sent after the diagnosis' grading ended
    assert '"duplicate"' in copy and "graded just before" in copy, copy
    assert stage_after_copy == "mitigation"
    assert '"200"' in fix
    assert graded == [("diagnosis", ANSWER), ("mitigation", "rolled geo back to its previous image")]
    seen = [step["stage"] for step in outcome.trajectory]
    assert seen[:2] == ["diagnosis", "mitigation"], seen  # the waiter did read the new stage


def test_a_copy_arriving_during_grading_is_answered_as_a_duplicate():
    graded: list = []

    async def main():
        desk = _desk(graded)
        async with AgentServer(_Sink(desk), None) as server:
            from mcp import Client

            async with httpx.AsyncClient(base_url=server.api_url, trust_env=False) as http, \
                    Client(server.mcp_url) as client:
                await http.post("/submit", json={"solution": ANSWER})
                during = _mcp_text(await client.call_tool("submit", {"ans": ANSWER}))
                other = (await http.post("/submit", json={"solution": "something else"})).json()
                graded_yet = list(graded)
                await desk.wait_graded()
        return during, other, graded_yet, desk.stage

    during, other, graded_yet, stage = asyncio.run(main())
    assert graded_yet == []  # both arrived while the diagnosis was being graded
    assert '"duplicate"' in during and "being graded" in during, during
    assert other["status"] == "200"  # another text during grading: absorbed, as upstream does
    assert stage == "mitigation" and graded == [("diagnosis", ANSWER)]


def test_a_client_that_read_the_new_stage_may_still_send_the_same_text():
    """The exception stays for a real client (upstream's autosubmit reads /status, then submits)."""
    graded: list = []

    async def main():
        desk = _desk(graded)
        async with AgentServer(_Sink(desk), None) as server:
            async with httpx.AsyncClient(base_url=server.api_url, trust_env=False) as http:
                await http.post("/submit", json={"solution": "autosubmit"})
                await desk.wait_graded()
                assert (await http.get("/status")).json()["stage"] == "mitigation"
                again = (await http.post("/submit", json={"solution": "autosubmit"})).json()
                await desk.wait_graded()
        return again

    assert asyncio.run(main())["status"] == "200"
    assert graded == [("diagnosis", "autosubmit"), ("mitigation", "autosubmit")]


def test_the_rl_text_env_answers_a_repeated_submit_as_a_duplicate():
    """The RL env's submit action on the same desk: the policy repeating its diagnosis right after
    it was graded gets a duplicate and the episode stays in mitigation."""
    from types import SimpleNamespace

    from sregym_core.rl.actions import parse_action
    from sregym_core.rl.env import SregymEnv

    graded: list = []

    async def main():
        desk = _desk(graded)
        episode = SimpleNamespace(attempt=_Attempt(desk))
        async with AgentServer(_Sink(desk), None) as server:
            env = SregymEnv.__new__(SregymEnv)
            env.server = server
            observations = [await env._call(episode, parse_action(f"submit {ANSWER}")),
                            await env._call(episode, parse_action(f"submit {ANSWER}"))]
        return observations, desk.stage

    observations, stage = asyncio.run(main())
    assert "stage now: mitigation" in observations[0]
    assert observations[1].startswith("Identical to the diagnosis submission graded just before"), observations[1]
    assert stage == "mitigation" and graded == [("diagnosis", ANSWER)]


class _Attempt:
    def __init__(self, desk: StageDesk) -> None:
        self.desk = desk

    @property
    def stage(self) -> str:
        return self.desk.stage


def test_the_window_counts_from_the_end_of_grading_not_from_the_submission():
    """A grading slower than the window (a judge under load): a copy arriving soon after it ended is
    still a duplicate, although it came long after the original was sent."""
    graded: list = []

    async def slow_judge(text):
        await asyncio.sleep(1.0)
        graded.append(("diagnosis", text))

    async def oracle(text):
        graded.append(("mitigation", text))

    async def main():
        desk = StageDesk({"diagnosis": slow_judge, "mitigation": oracle}, busy_poll_s=0.01, duplicate_window_s=0.5)
        desk.open()
        sent = time.monotonic()
        await desk.submit(ANSWER)
        await desk.wait_graded()
        await asyncio.sleep(0.2)
        copy = await desk.submit(ANSWER)
        return copy, time.monotonic() - sent, desk.stage

    (code, body), since_sent, stage = asyncio.run(main())
    assert since_sent > 1.0  # twice the window after the original
    assert code == 200 and body["status"] == "duplicate" and stage == "mitigation"
    assert graded == [("diagnosis", ANSWER)]
