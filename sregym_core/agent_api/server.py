"""The conductor HTTP API and the MCP server, served together by one uvicorn server on 127.0.0.1.

HTTP API (wire-compatible with upstream SREGym harnesses):

* ``POST /submit`` ``{"solution": str}`` — the diagnosis in stage ``diagnosis``, the "mitigation done"
  signal in stage ``mitigation``; acknowledged immediately, graded in the background.
* ``GET /status`` → ``{"stage": ...}``
* ``GET /get_app`` → ``{"app_name", "namespace", "descriptions"}``

MCP (streamable HTTP at ``/mcp``, SSE at ``/sse`` + ``/messages/``) with the upstream tool names.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Mapping
from typing import Any, Protocol

import structlog

from ..types import ObservabilityEndpoints, ToolSpec
from .kubectl_tool import KubectlTool

log = structlog.get_logger()

OBSERVABILITY_TOOLS: dict[str, tuple[str, dict[str, str]]] = {
    "get_metrics": ("Run a PromQL instant query against the cluster's Prometheus and return the series.",
                    {"query": "str"}),
    "get_alerts": ("List the alerts currently firing or pending in Prometheus.", {}),
    "get_logs": ("Query container logs (LogQL, or a bare service name) over the last N minutes.",
                 {"query": "str", "last_n_minutes": "int"}),
    "get_services": ("List the services that reported traces.", {}),
    "get_operations": ("List the operations (span names) of a traced service.", {"service": "str"}),
    "get_traces": ("Summarize a service's traces over the last N minutes: errors first, then the slowest.",
                   {"service": "str", "last_n_minutes": "int"}),
    "get_dependency_graph": ("The service dependency graph (caller -> callee, call counts) from traces.",
                             {"last_n_minutes": "int"}),
}


class SubmissionSink(Protocol):
    """The attempt the API and MCP server report to."""

    stage: str

    def submit(self, solution: str) -> tuple[int, dict[str, Any]]: ...

    def app_info(self) -> dict[str, Any]: ...


def _json(status: int, body: Mapping[str, Any]):
    from starlette.responses import JSONResponse

    return JSONResponse(dict(body), status_code=status)


def api_routes(sink: SubmissionSink) -> list:
    from starlette.routing import Route

    async def submit(request):
        raw = await request.body()
        if not raw.strip():
            return _json(400, {"error": "empty body", "hint": 'send JSON: {"solution": "<text>"}'})
        try:
            data = json.loads(raw)
        except ValueError as exc:
            return _json(400, {"error": f"body is not valid JSON: {exc}", "hint": 'send {"solution": "<text>"}'})
        if not isinstance(data, dict) or "solution" not in data:
            return _json(400, {"error": "missing field 'solution'", "hint": 'send {"solution": "<text>"}'})
        solution = data["solution"]
        if not isinstance(solution, str):
            solution = json.dumps(solution)  # upstream accepts any JSON value; keep it as text
        code, body = sink.submit(solution)
        return _json(code, body)

    async def status(_request):
        return _json(200, {"stage": sink.stage})

    async def get_app(_request):
        return _json(200, sink.app_info())

    return [Route("/submit", submit, methods=["POST"]), Route("/status", status, methods=["GET"]),
            Route("/get_app", get_app, methods=["GET"])]


def build_mcp(sink: SubmissionSink, kubectl: KubectlTool, tools: Mapping[str, ToolSpec],
              endpoints: ObservabilityEndpoints | None):
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name="sregym", instructions=(
        "Tools for investigating and repairing a Kubernetes application. Use exec_kubectl_cmd_safely for "
        "kubectl, the get_* tools for metrics, alerts, logs and traces, and submit(ans) to submit your "
        "diagnosis (first call) and then to declare the mitigation done (second call)."), log_level="WARNING")

    @server.tool(name="exec_kubectl_cmd_safely",
                 description="Run one kubectl command (no pipes or shell) with your credentials and return its output.")
    async def exec_kubectl_cmd_safely(cmd: str) -> str:
        return await kubectl.execute(cmd)

    @server.tool(name="rollback_command", description="Undo the last mutating kubectl command of this session.")
    async def rollback_command() -> str:
        return await kubectl.rollback()

    @server.tool(name="get_previous_rollbackable_cmd", description="Show the last command rollback_command would undo.")
    async def get_previous_rollbackable_cmd() -> str:
        return kubectl.previous_rollbackable()

    @server.tool(name="submit", description="Submit your diagnosis (stage diagnosis), then 'done' when mitigated (stage mitigation).")
    async def submit(ans: str) -> str:
        code, body = sink.submit(ans)
        return json.dumps({"http_status": code, **body})

    for name, (description, params) in OBSERVABILITY_TOOLS.items():
        server.tool(name=name, description=description)(_observability_tool(name, params, tools.get(name), endpoints))
    return server


def _observability_tool(name: str, params: dict[str, str], spec: ToolSpec | None, endpoints: ObservabilityEndpoints | None):
    async def call(**arguments: Any) -> str:
        if spec is None:
            return (f"{name} is not available: no observability plugin provides it on this cluster. "
                    "Use exec_kubectl_cmd_safely (logs, events, describe, top) instead.")
        try:
            result = spec.call(endpoints or ObservabilityEndpoints(), **arguments)
            if asyncio.iscoroutine(result):
                result = await result
            else:
                result = await asyncio.to_thread(lambda: result)
            return str(result)
        except Exception as exc:  # a tool error is an answer the agent can read, not a crash
            return f"{name} failed: {type(exc).__name__}: {exc}"

    # MCP derives the tool's input schema from the signature, so build one per parameter set
    if params == {"query": "str"}:
        async def tool(query: str) -> str:
            return await call(query=query)
    elif params == {"query": "str", "last_n_minutes": "int"}:
        async def tool(query: str, last_n_minutes: int = 15) -> str:
            return await call(query=query, last_n_minutes=last_n_minutes)
    elif params == {"service": "str"}:
        async def tool(service: str) -> str:
            return await call(service=service)
    elif params == {"service": "str", "last_n_minutes": "int"}:
        async def tool(service: str, last_n_minutes: int = 15) -> str:
            return await call(service=service, last_n_minutes=last_n_minutes)
    elif params == {"last_n_minutes": "int"}:
        async def tool(last_n_minutes: int = 15) -> str:
            return await call(last_n_minutes=last_n_minutes)
    else:
        async def tool() -> str:
            return await call()
    tool.__name__ = name
    return tool


class AgentServer:
    """One uvicorn server on 127.0.0.1 serving the HTTP API and MCP for one attempt."""

    def __init__(self, sink: SubmissionSink, kubectl: KubectlTool, *, tools: Mapping[str, ToolSpec] | None = None,
                 endpoints: ObservabilityEndpoints | None = None, host: str = "127.0.0.1") -> None:
        self.sink, self.kubectl, self.host = sink, kubectl, host
        self.tools = dict(tools or {})
        self.endpoints = endpoints
        self.port: int | None = None
        self._server = None
        self._task: asyncio.Task | None = None
        self._socket: socket.socket | None = None

    @property
    def api_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def mcp_url(self) -> str:
        return f"{self.api_url}/mcp"

    @property
    def sse_url(self) -> str:
        return f"{self.api_url}/sse"

    def build(self):
        from starlette.applications import Starlette

        mcp = build_mcp(self.sink, self.kubectl, self.tools, self.endpoints)
        streamable = mcp.streamable_http_app(host=self.host)
        sse = mcp.sse_app(host=self.host)
        return Starlette(routes=[*api_routes(self.sink), *streamable.routes, *sse.routes],
                         lifespan=streamable.router.lifespan_context)

    async def start(self) -> None:
        import uvicorn

        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((self.host, 0))
        self.port = self._socket.getsockname()[1]
        config = uvicorn.Config(self.build(), log_level="warning", lifespan="on", access_log=False)
        self._server = uvicorn.Server(config)
        self._server.install_signal_handlers = lambda: None  # the conductor owns signals
        self._task = asyncio.create_task(self._server.serve(sockets=[self._socket]))
        for _ in range(200):
            if self._server.started:
                break
            if self._task.done():
                self._task.result()
            await asyncio.sleep(0.02)
        log.debug("agent_server_started", url=self.api_url)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, 10)
            except (TimeoutError, asyncio.CancelledError):
                self._task.cancel()
        if self._socket is not None:
            self._socket.close()
