"""The echo agent drives a real HTTP endpoint (a tiny stand-in for the conductor API)."""

from __future__ import annotations

import asyncio
import json

from aiohttp import web
from sregym_noop.agent import EchoAgent

from sregym_core.agents import AgentTask


def test_echo_agent_submits_twice(tmp_path):
    received = []

    async def submit(request):
        received.append(await request.json())
        return web.json_response({"status": "accepted"})

    async def scenario():
        app = web.Application()
        app.router.add_post("/submit", submit)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        try:
            task = AgentTask(attempt_id="a1", app_name="x", app_namespace="x", app_description="d",
                             api_url=f"http://127.0.0.1:{port}", kubeconfig=tmp_path / "k", workdir=tmp_path)
            return await EchoAgent("it is the api").run(task)
        finally:
            await runner.cleanup()

    outcome = asyncio.run(scenario())
    assert outcome.status == "ok" and outcome.steps == 2
    assert received == [{"solution": "it is the api"}, {"solution": "mitigation done"}]
    assert json.loads(json.dumps(list(outcome.trajectory)))[0]["status"] == 200
