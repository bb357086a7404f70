"""A scripted OpenAI-compatible chat server on 127.0.0.1, for tests and dry runs without a provider.

::

    with ScriptedLLM([tool_call("exec_kubectl_cmd_safely", {"cmd": "kubectl get pods"}),
                      tool_call("submit", {"ans": "geo ..."})]) as llm:
        agent = ReactAgent(model="openai/stub", api_base=llm.url)

Each script entry answers one ``POST /v1/chat/completions``: a response body (``dict``), an HTTP
error status (``int``), or a callable taking the request body and returning either. When the
script runs out the server answers 500, so a test notices an agent that talks too much.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

Entry = dict[str, Any] | int | Callable[[dict[str, Any]], "dict[str, Any] | int"]

_ids = itertools.count(1)


def completion(message: dict[str, Any], *, prompt_tokens: int = 1200, completion_tokens: int = 80,
               finish_reason: str = "stop", model: str = "stub") -> dict[str, Any]:
    return {"id": f"chatcmpl-stub-{next(_ids)}", "object": "chat.completion", "created": 1_700_000_000, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


def tool_call(name: str, arguments: Mapping[str, Any] | str, *, content: str = "", **usage: int) -> dict[str, Any]:
    """A reply calling one tool; ``arguments`` as a string is sent verbatim (e.g. malformed JSON)."""
    return tool_calls([(name, arguments)], content=content, **usage)


def tool_calls(calls: Iterable[tuple[str, Mapping[str, Any] | str]], *, content: str = "", **usage: int) -> dict[str, Any]:
    entries = [{"id": f"call_{next(_ids)}", "type": "function",
                "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
               for name, args in calls]
    return completion({"role": "assistant", "content": content or None, "tool_calls": entries},
                      finish_reason="tool_calls", **usage)


def text(content: str, **usage: int) -> dict[str, Any]:
    return completion({"role": "assistant", "content": content}, **usage)


def last_tool_output(request: Mapping[str, Any]) -> str:
    """The newest tool result in a request (what a scripted reply usually reacts to)."""
    for message in reversed(request.get("messages") or []):
        if message.get("role") == "tool":
            return str(message.get("content") or "")
    return ""


class ScriptedLLM:
    """The server; runs its own event loop in a daemon thread so sync and async tests can use it."""

    def __init__(self, script: Iterable[Entry] = (), *, host: str = "127.0.0.1") -> None:
        if not host.startswith("127."):
            raise ValueError("the stub LLM only listens on 127.0.0.0/8")
        self.script: list[Entry] = list(script)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.host = host
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: Any = None
        self._lock = threading.Lock()

    def next_reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(body)
            if not self.script:
                return 500, {"error": {"message": "stub script exhausted", "type": "server_error"}}
            entry = self.script.pop(0)
        if callable(entry):
            entry = entry(body)
        if isinstance(entry, int):
            return entry, {"error": {"message": f"scripted status {entry}", "type": "server_error", "code": entry}}
        return 200, entry

    def start(self) -> str:
        from aiohttp import web

        started = threading.Event()
        failure: list[BaseException] = []
        self._loop = asyncio.new_event_loop()

        async def completions(request: web.Request) -> web.Response:
            try:
                body = await request.json()
            except ValueError:
                return web.json_response({"error": {"message": "body is not JSON"}}, status=400)
            self.headers.append(dict(request.headers))
            status, payload = self.next_reply(body)
            return web.json_response(payload, status=status)

        async def boot() -> None:
            app = web.Application()
            app.router.add_post("/v1/chat/completions", completions)
            app.router.add_post("/chat/completions", completions)
            self._runner = web.AppRunner(app, access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, self.host, 0)
            await site.start()
            port = site._server.sockets[0].getsockname()[1]
            self.url = f"http://{self.host}:{port}/v1"

        def serve() -> None:
            try:
                self._loop.run_until_complete(boot())
            except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
                failure.append(exc)
                started.set()
                return
            started.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=serve, name="scripted-llm", daemon=True)
        self._thread.start()
        if not started.wait(15) or failure:
            raise RuntimeError(f"the stub LLM server did not start: {failure[0] if failure else 'timeout'}")
        return self.url

    def stop(self) -> None:
        if self._loop is None:
            return
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._loop.close()
        self._loop = None

    def __enter__(self) -> ScriptedLLM:
        self.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()
