"""Fixtures: a scripted OpenAI-compatible stub server on 127.0.0.1 (aiohttp, in a thread)."""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

import pytest
from judge_llm_stub import StubLLM

# litellm must never reach the internet for its price list: only 127.0.0.1 is allowed here
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def stub_llm():
    from aiohttp import web

    stub = StubLLM()
    loop = asyncio.new_event_loop()
    started = threading.Event()
    runner_box: dict[str, Any] = {}

    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        stub.requests.append(body)
        stub.headers.append(dict(request.headers))
        status, payload = stub.next_reply(body)
        return web.json_response(payload, status=status)

    async def start() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", completions)
        app.router.add_post("/chat/completions", completions)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        stub.url = f"http://127.0.0.1:{port}/v1"
        runner_box["runner"] = runner
        started.set()

    thread = threading.Thread(target=lambda: (loop.run_until_complete(start()), loop.run_forever()), daemon=True)
    thread.start()
    assert started.wait(10), "stub LLM server did not start"
    try:
        yield stub
    finally:
        asyncio.run_coroutine_threadsafe(runner_box["runner"].cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
