"""Issue #34 attack 6: the same diagnosis sent twice (a client's retry, or HTTP and MCP together)
ended the attempt, the copy taken as the mitigation and graded on the unfixed system. The stage
desk is real; the graders are stand-ins that record what they were asked to grade."""

from __future__ import annotations

import asyncio

import httpx

from sregym_core.agent_api.server import AgentServer
from sregym_core.agent_api.stages import StageDesk


def _desk(graded: list, **options) -> StageDesk:
    async def judge(text):
        await asyncio.sleep(0.05)
        graded.append(("diagnosis", text))
        return "judged"

    async def oracle(text):
        graded.append(("mitigation", text))
        return "oracle"

    desk = StageDesk({"diagnosis": judge, "mitigation": oracle}, busy_poll_s=0.01, **options)
    desk.open()
    return desk


def test_a_copy_of_the_graded_diagnosis_is_a_duplicate_and_the_stage_stays():
    graded: list = []

    async def main():
        desk = _desk(graded)
        assert (await desk.submit("geo runs a missing image"))[1]["status"] == "200"
        await desk.wait_graded()
        assert desk.stage == "mitigation"
        code, body = await desk.submit("geo runs a missing image")  # the retry arrives after grading
        assert code == 200 and body["status"] == "duplicate"
        assert desk.stage == "mitigation" and "mitigation" not in desk.submissions
        code, body = await desk.submit("rolled geo back to its previous image")
        await desk.wait_graded()
        return desk, body

    desk, body = asyncio.run(main())
    assert body["status"] == "200"
    assert graded == [("diagnosis", "geo runs a missing image"), ("mitigation", "rolled geo back to its previous image")]
    assert desk.duplicates == 1


def test_the_same_text_is_taken_after_the_window_or_once_the_client_read_the_new_stage():
    graded: list = []

    async def main():
        late = _desk(graded, duplicate_window_s=0.05)
        await late.submit("done")
        await late.wait_graded()
        await asyncio.sleep(0.1)  # past the window: a deliberate answer for the new stage
        assert (await late.submit("done"))[1]["status"] == "200"
        seen = _desk(graded)
        await seen.submit("same")
        await seen.wait_graded()
        assert seen.report_stage() == "mitigation"  # GET /status told the client (upstream's autosubmit)
        assert (await seen.submit("same"))[1]["status"] == "200"
        await late.wait_graded()
        await seen.wait_graded()

    asyncio.run(main())
    assert [stage for stage, _ in graded] == ["diagnosis", "mitigation", "diagnosis", "mitigation"]


class _Sink:
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


def test_http_and_mcp_copies_sent_together_grade_once():
    """One answer sent over HTTP and over MCP at the same moment: one diagnosis is graded, and the
    stage is still ``mitigation`` afterwards (before: the second copy was graded as the mitigation)."""
    graded: list = []

    async def main():
        desk = _desk(graded)
        server = AgentServer(_Sink(desk), None)
        await server.start()
        try:
            from mcp import Client

            async with httpx.AsyncClient(base_url=server.api_url, trust_env=False) as http, \
                    Client(server.mcp_url) as client:
                answer = "the geo Deployment runs an image tag that does not exist"
                over_http, over_mcp = await asyncio.gather(
                    http.post("/submit", json={"solution": answer}), client.call_tool("submit", {"ans": answer}))
                await desk.wait_graded()
                # a retry of the same text right after grading ended
                retry = await client.call_tool("submit", {"ans": answer})
                stage = desk.stage
        finally:
            await server.stop()
        return over_http.json(), over_mcp.content[0].text, retry.content[0].text, stage

    http_body, mcp_text, retry_text, stage = asyncio.run(main())
    # whichever copy came first is graded; the other arrived during its grading: a duplicate
    assert sorted([http_body["status"], "duplicate" if '"duplicate"' in mcp_text else "200"]) == ["200", "duplicate"]
    assert "duplicate" in retry_text or "Identical" in retry_text
    assert stage == "mitigation"
    assert graded == [("diagnosis", "the geo Deployment runs an image tag that does not exist")]
